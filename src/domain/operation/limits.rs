//! Limits above the item (docs/limits.md): a limit group's per-user count
//! over several items, and an item's per-identity count over the accounts
//! presenting one identity document. Their counts live in limit buckets of
//! their own (`model::limits`), never in the item's slot, so one script
//! cannot check the count and take the stock together. The buy therefore
//! runs the CLAIM protocol:
//!
//! 1. claim the units in every limit the item is under (`lua/limit_claim.lua`,
//!    idempotent per claim id: item, user and request id), in a fixed order;
//!    a refusal releases what this attempt's claim id holds and answers
//!    `limit_reached` (nothing bought);
//! 2. buy in the item's slot as always;
//! 3. a definitive refusal there (anything but `ok`, `unreplicated` and
//!    `request_id_reused`) releases every claim (`lua/limit_release.lua`,
//!    once only). An unknown result keeps them: never over the limit, and a
//!    retry with the same request id finds its claims (`already_claimed`)
//!    and the item slot's request-id memory answers the buy.
//!
//! Written once for every "limit above the slot" (a seat item's sections
//! in other slots may use it the same way).

use anyhow::{Context, Result};
use redis::ConnectionLike;

use crate::domain::item::{Attempt, SaleItem};
use crate::domain::slot::BuyRequest;
use crate::model::campaign::{Campaign, Item};
use crate::model::keys::LIVE_PREFIX;
use crate::model::limits::{LimitKeys, identity_bindings, identity_digest};
use crate::redis_client::scripts::CorruptState;
use crate::redis_client::scripts::ScriptCall;
use crate::redis_client::scripts::buy::Outcome;
use crate::redis_client::scripts::limit_claim::{self, Claimed, LimitClaim};
use crate::redis_client::scripts::limit_release::{self, LimitRelease};

/// One limit a buy counts against.
#[derive(Debug, Clone)]
pub struct Limit {
    /// What the limit is, for messages (`limit group iphone-16-pro`).
    pub name: String,
    /// Who it counts: the user, or the identity's digest.
    pub member: String,
    /// Who it counts, as a sentence says it (`user alice`, `the identity`).
    pub member_shown: String,
    pub limit: u32,
    pub keys: LimitKeys,
    /// Units this buy claims in this limit (a seat's attendee: their seats).
    pub qty: u32,
    /// The claim's id in this limit: the buy's, or with the attendee's
    /// digest after it (two attendees of one buy may share a bucket).
    pub claim_id: String,
}

/// Every limit above the item one buy counts against, in claiming order,
/// and the claim id they share.
#[derive(Debug, Clone)]
pub struct Claims {
    pub claim_id: String,
    pub qty: u32,
    pub limits: Vec<Limit>,
    expire_at_ms: String,
}

/// Why claiming refused the buy: its outcome and the sentence saying why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub outcome: Outcome,
    pub problem: String,
}

/// Whether `item` of `campaign` is under a limit above it (a group, an
/// identity limit): its buy is then more than one script call.
pub fn has_limits(campaign: &Campaign, item: &Item) -> bool {
    campaign.limit_group(&item.id).is_some() || item.per_identity_limit.is_some()
}

/// The claim id of one buy: the item, the user and the request id, so a
/// retry finds its claim and no other buy (another item, another user with
/// the same request id) ever does. The user's length keeps `a:b` + `c`
/// apart from `a` + `b:c`.
pub fn claim_id(item: &str, user: &str, request_id: &str) -> String {
    format!("{item}:{}:{user}:{request_id}", user.len())
}

impl Claims {
    /// The limits of a buy of `qty` units of `item` by `user` with
    /// `request_id`; `identity`: the identity's digest the buy counts under
    /// (resolved by [`resolve_identity`]).
    pub fn of(
        campaign: &Campaign,
        item: &Item,
        user: &str,
        request_id: &str,
        qty: u32,
        identity: Option<&str>,
        attendees: &[String],
    ) -> Claims {
        Claims::under(
            LIVE_PREFIX,
            campaign,
            item,
            user,
            request_id,
            qty,
            identity,
            attendees,
        )
    }

    /// [`Claims::of`] under `prefix` (the load test's namespace, or live).
    /// `attendees`: a seat buy's attendee identities (their digests, one per
    /// seat): each counts its own seats against the item's
    /// `per_identity_limit`, in place of the buyer's identity (docs/seats.md,
    /// "Attendees").
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn under(
        prefix: &str,
        campaign: &Campaign,
        item: &Item,
        user: &str,
        request_id: &str,
        qty: u32,
        identity: Option<&str>,
        attendees: &[String],
    ) -> Claims {
        let claim = claim_id(&item.id, user, request_id);
        let mut limits = Vec::new();
        if let Some(group) = campaign.limit_group(&item.id) {
            limits.push(Limit {
                name: format!("limit group {} (per_user_limit)", group.id),
                member: user.to_string(),
                member_shown: format!("user {user:?}"),
                limit: group.per_user_limit,
                keys: LimitKeys::group_under(prefix, &campaign.id, &group.id, user),
                qty,
                claim_id: claim.clone(),
            });
        }
        match (item.per_identity_limit, identity) {
            (Some(limit), _) if !attendees.is_empty() => {
                let mut digests: Vec<&String> = attendees.iter().collect();
                digests.sort();
                digests.dedup();
                for digest in digests {
                    limits.push(Limit {
                        name: format!("per_identity_limit of item {} (an attendee)", item.id),
                        member: digest.clone(),
                        member_shown: "an attendee's identity".to_string(),
                        limit,
                        keys: LimitKeys::identity_under(prefix, &campaign.id, &item.id, digest),
                        qty: attendees.iter().filter(|a| *a == digest).count() as u32,
                        // Two attendees of one buy may share a limit bucket.
                        claim_id: format!("{claim}:{}", &digest[..16.min(digest.len())]),
                    });
                }
            }
            (Some(limit), Some(digest)) => limits.push(Limit {
                name: format!("per_identity_limit of item {}", item.id),
                member: digest.to_string(),
                member_shown: "the identity".to_string(),
                limit,
                keys: LimitKeys::identity_under(prefix, &campaign.id, &item.id, digest),
                qty,
                claim_id: claim.clone(),
            }),
            _ => {}
        }
        if limits.is_empty() {
            // Most buys: nothing to claim, nothing to build.
            return Claims {
                claim_id: String::new(),
                qty,
                limits,
                expire_at_ms: String::new(),
            };
        }
        Claims {
            claim_id: claim,
            qty,
            limits,
            expire_at_ms: campaign
                .expire_at_ms()
                .map_or(String::new(), |at| at.to_string()),
        }
    }

    /// Claim every limit, in order. `Ok(Err(refusal))`: one refused; past
    /// the limit, the claims of this claim id before it are released again
    /// (nothing counted, nothing bought). `Err`: a call failed; what was
    /// claimed stays (the safe side).
    pub fn claim<C: ConnectionLike>(&self, conn: &mut C) -> Result<Result<(), Refusal>> {
        for (index, limit) in self.limits.iter().enumerate() {
            let reply = LimitClaim {
                limit_counts: limit.keys.counts.as_str(),
                limit_claims: limit.keys.claims.as_str(),
                member: limit.member.as_str(),
                claim_id: limit.claim_id.as_str(),
                qty: &limit.qty.to_string(),
                limit: &limit.limit.to_string(),
                expire_at_ms: self.expire_at_ms.as_str(),
            }
            .invoke(conn)
            .with_context(|| format!("cannot claim {} units of {}", limit.qty, limit.name));
            let refusal = match reply.and_then(limit_claim::parse_reply) {
                Ok(reply) => match reply.claimed {
                    Claimed::Now | Claimed::Already => continue,
                    Claimed::LimitReached => Refusal {
                        outcome: Outcome::LimitReached,
                        problem: format!(
                            "{}: {} holds {} of {}, {} more would pass it",
                            limit.name, limit.member_shown, reply.held, limit.limit, limit.qty
                        ),
                    },
                    Claimed::Reused => Refusal {
                        outcome: Outcome::RequestIdReused,
                        problem: format!(
                            "{}: this request id claimed another qty before",
                            limit.name
                        ),
                    },
                },
                Err(error) => match error.downcast_ref::<CorruptState>() {
                    Some(corrupt) => Refusal {
                        outcome: Outcome::CorruptState,
                        problem: corrupt.0.clone(),
                    },
                    None => return Err(error),
                },
            };
            // Past the limit: nothing of this claim id was bought (the buy
            // comes after every claim), so what it holds before goes back.
            // A reused claim id or a corrupt bucket keeps them: an earlier
            // attempt with this id may have bought (the safe side).
            if refusal.outcome == Outcome::LimitReached {
                self.release_first(conn, index)?;
            }
            return Ok(Err(refusal));
        }
        Ok(Ok(()))
    }

    /// Release every claim of this claim id: the item refused the buy for good.
    pub fn release<C: ConnectionLike>(&self, conn: &mut C) -> Result<()> {
        self.release_first(conn, self.limits.len())
    }

    /// Release the claims of the first `count` limits (those claimed so far).
    fn release_first<C: ConnectionLike>(&self, conn: &mut C, count: usize) -> Result<()> {
        for limit in &self.limits[..count] {
            let reply = LimitRelease {
                limit_counts: limit.keys.counts.as_str(),
                limit_claims: limit.keys.claims.as_str(),
                claim_id: limit.claim_id.as_str(),
            }
            .invoke(conn)
            .with_context(|| format!("cannot release the claim on {}", limit.name))?;
            limit_release::parse_reply(reply)
                .with_context(|| format!("cannot release the claim on {}", limit.name))?;
        }
        Ok(())
    }
}

/// The whole protocol for one attempt on `sale`: claim, buy, and release
/// after a definitive refusal. `Ok(Err(refusal))`: a limit refused, nothing
/// bought. `Err`: a call failed; what was claimed stays (the safe side; a
/// retry with the same request id resumes).
pub fn reserve_claimed<C: ConnectionLike>(
    conn: &mut C,
    sale: &SaleItem,
    claims: &Claims,
    request: &BuyRequest,
    payment_timeout_ms: u64,
) -> Result<Result<Attempt, Refusal>> {
    if let Err(refusal) = claims.claim(conn)? {
        return Ok(Err(refusal));
    }
    let attempt = sale.reserve(conn, request, payment_timeout_ms)?;
    if releases(attempt.reply.outcome) {
        claims.release(conn)?;
    }
    Ok(Ok(attempt))
}

/// Whether the item's answer `outcome` ends the buy with nothing bought by
/// this request id, so its claims go back. `request_id_reused` keeps them:
/// the request id did buy (other units), and keeping is the safe side.
pub fn releases(outcome: Outcome) -> bool {
    !matches!(
        outcome,
        Outcome::Ok | Outcome::Unreplicated | Outcome::RequestIdReused
    )
}

/// The identity a buy of `item` by `user` counts under (its digest), from
/// `presented` (the shop's identity hash, if the buy carries one) and the
/// account's binding (`seckill register --identity`): `Ok(None)` when the
/// item has no identity limit and none was presented. A refusal when the
/// item needs one and there is none, or the account is bound to another.
pub fn resolve_identity<C: ConnectionLike>(
    conn: &mut C,
    campaign: &Campaign,
    item: &Item,
    user: &str,
    presented: Option<&str>,
) -> Result<Result<Option<String>, Refusal>> {
    let presented = presented.map(|identity| identity_digest(&campaign.id, identity));
    if item.per_identity_limit.is_none() && presented.is_none() {
        return Ok(Ok(None));
    }
    let bound = match bound_identity(conn, campaign, user)? {
        Ok(bound) => bound,
        Err(refusal) => return Ok(Err(refusal)),
    };
    Ok(match (bound, presented) {
        (Some(bound), Some(presented)) if bound != presented => Err(Refusal {
            outcome: Outcome::IdentityMismatch,
            problem: format!(
                "user {user:?} is bound to another identity (seckill register --identity) \
                 than the one this buy presents"
            ),
        }),
        (Some(digest), _) | (None, Some(digest)) => Ok(Some(digest)),
        (None, None) => Err(Refusal {
            outcome: Outcome::IdentityRequired,
            problem: format!(
                "item {} has per_identity_limit {}: the buy must carry the shopper's identity \
                 (--identity / \"identity\"), or the account be bound to one (seckill register --identity)",
                item.id,
                item.per_identity_limit.unwrap_or(0)
            ),
        }),
    })
}

/// The digest `user` is bound to, if any; a stored value that is no digest
/// is `corrupt_state` (nothing was written).
fn bound_identity<C: ConnectionLike>(
    conn: &mut C,
    campaign: &Campaign,
    user: &str,
) -> Result<Result<Option<String>, Refusal>> {
    let key = identity_bindings(&campaign.id, user);
    let corrupt = |what: String| {
        Ok(Err(Refusal {
            outcome: Outcome::CorruptState,
            problem: format!("{key}: {what}"),
        }))
    };
    match redis::cmd("HGET")
        .arg(&key)
        .arg(user)
        .query::<Option<String>>(conn)
    {
        Ok(Some(text)) if !is_digest(&text) => corrupt(format!(
            "the identity of user {user:?} holds {text:?}, not a digest"
        )),
        Ok(bound) => Ok(Ok(bound)),
        Err(error) if error.code() == Some("WRONGTYPE") => corrupt(
            error
                .detail()
                .unwrap_or("a key of the wrong type")
                .to_string(),
        ),
        Err(error) => Err(anyhow::Error::new(error).context(format!("cannot read {key}"))),
    }
}

/// 64 lowercase hex digits: what [`identity_digest`] makes.
fn is_digest(text: &str) -> bool {
    text.len() == 64 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The limit keys `init` deletes with `items` (ids) of `campaign`, one list
/// per item: the item's identity-limit buckets, and a group's buckets with
/// the first of its items when every item of the group is reset (a group
/// half reset keeps its counts: its users hold units of the items not
/// reset). Identity bindings are the accounts', not the sale's: kept.
pub fn reset_keys(campaign: &Campaign, items: &[&str]) -> Vec<Vec<String>> {
    let flatten = |buckets: Vec<LimitKeys>| -> Vec<String> {
        buckets
            .into_iter()
            .flat_map(|keys| [keys.counts, keys.claims])
            .collect()
    };
    items
        .iter()
        .map(|id| {
            let mut keys = Vec::new();
            if campaign
                .item(id)
                .is_ok_and(|item| item.per_identity_limit.is_some())
            {
                keys.extend(flatten(LimitKeys::every(&campaign.id, &format!("i.{id}"))));
            }
            if let Some(group) = campaign.limit_group(id)
                && group.items.first().is_some_and(|first| first == id)
                && group
                    .items
                    .iter()
                    .all(|member| items.contains(&member.as_str()))
            {
                keys.extend(flatten(LimitKeys::every(
                    &campaign.id,
                    &format!("g.{}", group.id),
                )));
            }
            keys
        })
        .collect()
}

/// How many of `keys` exist (one EXISTS each: on a cluster they are in many slots).
pub fn existing<C: ConnectionLike>(conn: &mut C, keys: &[String]) -> Result<u64> {
    each_key(conn, keys, "EXISTS", "check")
}

/// Delete `keys` (one DEL each); how many there were.
pub fn delete<C: ConnectionLike>(conn: &mut C, keys: &[String]) -> Result<u64> {
    each_key(conn, keys, "DEL", "delete")
}

/// `command` on each of `keys` alone, its integer replies added up.
fn each_key<C: ConnectionLike>(
    conn: &mut C,
    keys: &[String],
    command: &str,
    verb: &str,
) -> Result<u64> {
    let mut total = 0;
    for key in keys {
        let n: u64 = redis::cmd(command)
            .arg(key)
            .query(conn)
            .with_context(|| format!("cannot {verb} {key}"))?;
        total += n;
    }
    Ok(total)
}
