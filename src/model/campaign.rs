//! The campaign file: what an operator writes, parsed and validated.
//!
//! YAML is read with `serde-saphyr` (a maintained, pure-Rust successor to the
//! archived `serde_yaml`). Every field that can be wrong on its own is read as
//! [`Spanned`] so validation errors point at `file:line:column` just like
//! syntax errors do. Money is parsed from text to integer cents; a float never
//! touches a price.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use serde::Deserialize;
use serde_saphyr::Spanned;

use crate::model::error::usage;
pub use crate::model::fields::MAX_DURATION;
pub(crate) use crate::model::fields::is_valid_id;
pub(crate) use crate::model::fields::parse_price;
use crate::model::fields::{at, parse_duration, parse_time};
use crate::model::limits::{self, LimitGroup, RawLimitGroup};
use crate::model::regions::{self, RawRegions, Region};
use crate::model::seats::{self, RawSeats, Seating};
use crate::model::waiting_room::{self, RawWaitingRoom, WaitingRoom};

/// Largest stock one item may have. Past this a typo is likelier than a real
/// sale, and one Redis key would be the bottleneck (see "buckets" in the README).
pub use crate::model::fields::MAX_STOCK;
/// Most buckets one item may be split into (see `docs/buckets.md`).
pub(crate) const MAX_BUCKETS: i64 = 256;
/// Largest `per_user_limit`; anything above is effectively "no limit" and a typo.
pub const MAX_PER_USER_LIMIT: i64 = 10_000;
/// Largest campaign file read, checked before reading: the largest shipped
/// file is about 1 KB; a megabyte is thousands of items.
pub const MAX_FILE_BYTES: u64 = 1024 * 1024;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCampaign {
    campaign: Spanned<String>,
    #[serde(default)]
    redis: Option<String>,
    #[serde(default)]
    starts_at: Option<Spanned<String>>,
    #[serde(default)]
    ends_at: Option<Spanned<String>>,
    #[serde(default)]
    keep_after_end: Option<Spanned<String>>,
    #[serde(default)]
    per_user_limit: Option<Spanned<i64>>,
    #[serde(default)]
    rate_limit: Option<RawRateLimit>,
    items: Spanned<Vec<RawItem>>,
    #[serde(default)]
    orders: Option<RawOrders>,
    #[serde(default)]
    payment_timeout: Option<Spanned<String>>,
    #[serde(default)]
    rebuy_after_release: Option<bool>,
    /// Every item's waiting room (an item's own `waiting_room` replaces it).
    #[serde(default)]
    waiting_room: Option<RawWaitingRoom>,
    /// The regions the sale runs in (docs/regions.md).
    #[serde(default)]
    regions: Option<Spanned<RawRegions>>,
    /// Per-user limits over several items (docs/limits.md).
    #[serde(default)]
    limit_groups: Option<Spanned<BTreeMap<String, RawLimitGroup>>>,
    /// Every item's units per identity document (an item's own replaces it).
    #[serde(default)]
    per_identity_limit: Option<Spanned<i64>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRateLimit {
    window: Spanned<String>,
    max_requests: Spanned<i64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawItem {
    id: Spanned<String>,
    name: String,
    /// Required, except on a seat item whose every section has its own.
    #[serde(default)]
    price: Option<Spanned<String>>,
    /// Required, except on a seat item (its stock is its sellable seats).
    #[serde(default)]
    stock: Option<Spanned<i64>>,
    #[serde(default)]
    buckets: Option<Spanned<i64>>,
    /// A seat item's map (docs/seats.md).
    #[serde(default)]
    seats: Option<RawSeats>,
    #[serde(default)]
    waiting_room: Option<RawWaitingRoom>,
    /// Units per region, instead of the campaign's shares.
    #[serde(default)]
    regions: Option<Spanned<BTreeMap<String, i64>>>,
    #[serde(default)]
    per_identity_limit: Option<Spanned<i64>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawOrders {
    store: String,
}

/// A validated campaign.
#[derive(Debug, Clone)]
pub struct Campaign {
    /// The file it came from (for messages).
    pub(crate) path: PathBuf,
    /// Campaign id: `[A-Za-z0-9_-]{1,64}`; part of every Redis key.
    pub id: String,
    /// `redis:` from the file, if any (lowest precedence).
    pub(crate) redis_url: Option<String>,
    /// Sale opens at this Unix time in milliseconds; `None` = open now.
    pub starts_at_ms: Option<i64>,
    /// Sale closes at this Unix time in milliseconds; `None` = no end.
    pub ends_at_ms: Option<i64>,
    /// The UTC offset (seconds east) the file writes `starts_at` in, else
    /// `ends_at`: the times shown to people are in it (`--tz file`).
    pub(crate) utc_offset_s: Option<i32>,
    /// Keys expire this long after `ends_at`.
    pub keep_after_end: Duration,
    /// Units one user may buy of one item.
    pub per_user_limit: u32,
    /// Per user, per item attempt limit.
    pub rate_limit: Option<RateLimit>,
    /// The items on sale, in file order.
    pub items: Vec<Item>,
    /// `orders.store` from the file, if any.
    pub(crate) orders_store: Option<String>,
    /// `payment_timeout`: an `ok` is a reservation to be paid within this
    /// long (Redis time), else released. `None` = an `ok` is final.
    pub payment_timeout: Option<Duration>,
    /// `rebuy_after_release` (default true): a released order gives its
    /// units back to the user's per-user limit, so they may buy again.
    pub rebuy_after_release: bool,
    /// `regions:` in name order (docs/regions.md); empty: one Redis.
    pub regions: Vec<Region>,
    /// The region this campaign is seen from (`--region`, [`Campaign::in_region`]):
    /// the `redis:` and every item's `stock` are that region's.
    pub region: Option<String>,
    /// The region's Redis is a cluster (`regions.NAME.cluster`).
    pub(crate) region_cluster: bool,
    /// `limit_groups:` in name order (docs/limits.md).
    pub limit_groups: Vec<LimitGroup>,
}

/// At most `max_requests` buy attempts per user per item within `window`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimit {
    pub window: Duration,
    pub(crate) max_requests: u32,
}

/// One item on sale.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    pub id: String,
    pub(crate) name: String,
    pub price_cents: i64,
    pub stock: i64,
    /// Stock buckets, 1..=[`MAX_BUCKETS`] (see `docs/buckets.md`); 1 = one slot, today's layout.
    pub(crate) buckets: u32,
    /// The item's waiting room (docs/waiting-room.md); `None`: off, every
    /// buy goes straight to the buy script as before.
    pub waiting_room: Option<WaitingRoom>,
    /// Units per region, in the order of [`Campaign::regions`] (empty
    /// without regions); they add up to the file's stock.
    pub region_stock: Vec<i64>,
    /// A seat item's map: its units are seats, one slot per section
    /// (docs/seats.md); `stock` is then its sellable seats and `buckets`
    /// its section count.
    pub seating: Option<Seating>,
    /// Units one identity document may buy of this item over every account
    /// presenting it (docs/limits.md); `None`: no identity limit.
    pub per_identity_limit: Option<u32>,
}

impl Item {
    /// The item's units over every region (the file's `stock`).
    pub fn total_stock(&self) -> i64 {
        if self.region_stock.is_empty() {
            self.stock
        } else {
            self.region_stock.iter().sum()
        }
    }
}

impl Campaign {
    /// Read and validate a campaign file. Every problem is a usage error
    /// (exit 2) whose message starts with `file:line:column`.
    pub fn load(path: &Path) -> Result<Campaign> {
        let text = read_bounded(path).map_err(|e| usage(format!("{e:#}")))?;
        Campaign::parse(&text, path)
    }

    /// Parse campaign YAML `text`; `path` is only used in messages.
    pub fn parse(text: &str, path: &Path) -> Result<Campaign> {
        let only_comments = text
            .lines()
            .all(|line| line.trim().is_empty() || line.trim_start().starts_with('#'));
        if only_comments {
            return Err(usage(format!(
                "{}:1:1: the file is empty; a campaign needs at least `campaign:` and `items:`",
                path.display()
            )));
        }
        let raw: RawCampaign =
            serde_saphyr::from_str_with_options(text, yaml_options()).map_err(|e| {
                let (line, column) = e
                    .location()
                    .map(|l| (l.line(), l.column()))
                    .unwrap_or((0, 0));
                usage(format!(
                    "{}:{line}:{column}: {}",
                    path.display(),
                    plain_message(&e)
                ))
            })?;
        validate(raw, path)
    }

    /// Unix ms after which every key of this campaign may expire; `None` = never.
    pub fn expire_at_ms(&self) -> Option<i64> {
        self.ends_at_ms
            .map(|end| end.saturating_add(self.keep_after_end.as_millis() as i64))
    }

    /// The item with this id, or a usage error listing the ids there are.
    pub fn item(&self, id: &str) -> Result<&Item> {
        self.items.iter().find(|item| item.id == id).ok_or_else(|| {
            let ids: Vec<&str> = self.items.iter().map(|i| i.id.as_str()).collect();
            usage(format!(
                "campaign {} has no item {id:?} (items: {})",
                self.id,
                ids.join(", ")
            ))
        })
    }

    /// The campaign as region `name` sees it: its Redis, its order database
    /// and its share of every item as the item's stock.
    pub fn in_region(&self, name: &str) -> Result<Campaign> {
        let Some(index) = self.regions.iter().position(|r| r.name == name) else {
            if self.regions.is_empty() {
                return Err(usage(format!(
                    "--region {name}: campaign {} has no regions (docs/regions.md)",
                    self.id
                )));
            }
            return Err(usage(format!(
                "--region {name}: campaign {} has no region {name:?} (regions: {})",
                self.id,
                self.region_names().join(", ")
            )));
        };
        let region = &self.regions[index];
        let mut view = self.clone();
        view.redis_url = Some(region.redis_url.clone());
        view.region_cluster = region.cluster;
        if region.orders_store.is_some() {
            view.orders_store = region.orders_store.clone();
        }
        for item in &mut view.items {
            item.stock = item.region_stock[index];
        }
        view.region = Some(name.to_string());
        Ok(view)
    }

    /// The regions' names, in name order.
    pub fn region_names(&self) -> Vec<&str> {
        self.regions.iter().map(|r| r.name.as_str()).collect()
    }

    /// The limit group item `item` is in, if any.
    pub fn limit_group(&self, item: &str) -> Option<&LimitGroup> {
        self.limit_groups
            .iter()
            .find(|group| group.items.iter().any(|id| id == item))
    }

    /// `Some(id)` selects one item, `None` all of them.
    pub(crate) fn select_items(&self, id: Option<&str>) -> Result<Vec<&Item>> {
        match id {
            Some(id) => Ok(vec![self.item(id)?]),
            None => Ok(self.items.iter().collect()),
        }
    }
}

/// serde-saphyr renders "error: line L column C: message" plus a source
/// snippet; we say the location once, as `file:line:column`, so keep only the message.
fn plain_message(error: &serde_saphyr::Error) -> String {
    let rendered = error.to_string();
    let first = rendered.lines().next().unwrap_or("invalid YAML").trim();
    let message = first.strip_prefix("error: ").unwrap_or(first);
    let message = match message.strip_prefix("line ") {
        Some(rest) => rest.split_once(": ").map_or(rest, |(_, m)| m),
        None => message,
    };
    let message = message.split(" at line ").next().unwrap_or(message);
    if let Some(breach) = message.strip_prefix("budget breached: ") {
        let breach = breach_in_words(breach);
        return format!(
            "the YAML budget of a campaign file is exceeded ({breach}; at most {MAX_YAML_ALIASES} aliases, \
             {MAX_YAML_NODES} nodes, nesting {MAX_YAML_DEPTH} deep, one document)"
        );
    }
    match message {
        "invalid i64" | "invalid u64" | "invalid i32" => "expected a whole number".to_string(),
        other => other.to_string(),
    }
}

/// serde-saphyr's budget breach, which it writes as Rust's Debug text
/// (`Aliases { aliases: 101 }`), in words: `101 aliases`, `nesting 17 deep`.
fn breach_in_words(breach: &str) -> String {
    let Some((_, fields)) = breach.split_once('{') else {
        return breach.to_string();
    };
    fields
        .trim_end_matches('}')
        .split(',')
        .filter_map(|field| field.split_once(':'))
        .map(|(name, value)| match (name.trim(), value.trim()) {
            ("depth", n) => format!("nesting {n} deep"),
            (name, n) => format!("{n} {}", name.replace('_', " ")),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Read a campaign file without ever blocking or reading without end: the
/// path must name a regular file (a FIFO would block the open, a device like
/// `/dev/zero` never ends) of at most [`MAX_FILE_BYTES`], checked before
/// reading, and the read itself stops one byte past the cap in case the file
/// grew or was swapped in between.
fn read_bounded(path: &Path) -> Result<String> {
    let shown = path.display();
    let cannot_read = || format!("cannot read campaign file {shown}");
    let metadata = std::fs::metadata(path).with_context(cannot_read)?;
    check_file_shape(path, &metadata)?;
    let file = std::fs::File::open(path).with_context(cannot_read)?;
    check_file_shape(path, &file.metadata().with_context(cannot_read)?)?;
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(
        &mut std::io::Read::take(file, MAX_FILE_BYTES + 1),
        &mut bytes,
    )
    .with_context(cannot_read)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        anyhow::bail!(
            "{shown} grew past the {MAX_FILE_BYTES}-byte limit of a campaign file while being read"
        );
    }
    String::from_utf8(bytes).with_context(|| format!("{shown} is not UTF-8 text"))
}

fn check_file_shape(path: &Path, metadata: &std::fs::Metadata) -> Result<()> {
    let shown = path.display();
    if !metadata.is_file() {
        anyhow::bail!("campaign file {shown} is not a regular file");
    }
    if metadata.len() > MAX_FILE_BYTES {
        anyhow::bail!(
            "campaign file {shown} is {} bytes, larger than the {MAX_FILE_BYTES}-byte limit of a campaign file",
            metadata.len()
        );
    }
    Ok(())
}

/// Parser limits for a campaign file: a real one has a few dozen nodes and
/// no reason for more than a handful of aliases (`*name`), so an alias or
/// nesting "bomb" is refused long before it costs time or memory.
pub(crate) const MAX_YAML_ALIASES: usize = 100;
/// Largest number of YAML nodes (scalars, sequences, mappings) in a campaign file.
pub(crate) const MAX_YAML_NODES: usize = 100_000;
/// Deepest nesting of a campaign file (it needs 4).
pub(crate) const MAX_YAML_DEPTH: usize = 16;

fn yaml_options() -> serde_saphyr::Options {
    serde_saphyr::options! {
        budget: serde_saphyr::budget! {
            max_aliases: MAX_YAML_ALIASES,
            max_nodes: MAX_YAML_NODES,
            max_events: 4 * MAX_YAML_NODES,
            max_depth: MAX_YAML_DEPTH,
            max_documents: 1,
            max_inclusion_depth: 0,
            max_total_scalar_bytes: MAX_FILE_BYTES as usize,
        },
        alias_limits: serde_saphyr::alias_limits! {
            max_total_replayed_events: MAX_YAML_NODES,
            max_replay_stack_depth: MAX_YAML_DEPTH,
        },
    }
}

fn validate(raw: RawCampaign, path: &Path) -> Result<Campaign> {
    if !is_valid_id(&raw.campaign.value) {
        return Err(at(
            path,
            &raw.campaign,
            format!(
                "campaign id {:?} must be 1..64 characters of letters, digits, '-' or '_'",
                raw.campaign.value
            ),
        ));
    }
    let starts_at_ms = raw
        .starts_at
        .as_ref()
        .map(|s| parse_time(path, s, "starts_at"))
        .transpose()?;
    let ends_at_ms = raw
        .ends_at
        .as_ref()
        .map(|s| parse_time(path, s, "ends_at"))
        .transpose()?;
    let utc_offset_s = [&raw.starts_at, &raw.ends_at]
        .into_iter()
        .flatten()
        .find_map(|text| chrono::DateTime::parse_from_rfc3339(text.value.trim()).ok())
        .map(|t| t.offset().local_minus_utc());
    if let (Some(start), Some(end), Some(end_span)) = (starts_at_ms, ends_at_ms, &raw.ends_at)
        && end <= start
    {
        return Err(at(path, end_span, "ends_at must be after starts_at"));
    }
    let keep_after_end = match &raw.keep_after_end {
        Some(text) => parse_duration(path, text, "keep_after_end")?,
        None => Duration::from_secs(3600),
    };
    let per_user_limit = match &raw.per_user_limit {
        Some(limit) if !(1..=MAX_PER_USER_LIMIT).contains(&limit.value) => {
            return Err(at(
                path,
                limit,
                format!(
                    "per_user_limit must be between 1 and {MAX_PER_USER_LIMIT}, got {}",
                    limit.value
                ),
            ));
        }
        Some(limit) => limit.value as u32,
        None => 1,
    };
    let rate_limit = match &raw.rate_limit {
        Some(rate) => {
            let window = parse_duration(path, &rate.window, "rate_limit.window")?;
            if window.as_millis() < 1 {
                return Err(at(
                    path,
                    &rate.window,
                    "rate_limit.window must be at least 1ms",
                ));
            }
            if !(1..=1_000_000).contains(&rate.max_requests.value) {
                return Err(at(
                    path,
                    &rate.max_requests,
                    format!(
                        "rate_limit.max_requests must be between 1 and 1000000, got {}",
                        rate.max_requests.value
                    ),
                ));
            }
            Some(RateLimit {
                window,
                max_requests: rate.max_requests.value as u32,
            })
        }
        None => None,
    };
    let payment_timeout = match &raw.payment_timeout {
        Some(text) => Some(check_payment_timeout(
            path,
            text,
            ends_at_ms.is_some(),
            keep_after_end,
        )?),
        None => None,
    };
    if raw.items.value.is_empty() {
        return Err(at(path, &raw.items, "items must list at least one item"));
    }
    let campaign_room = raw
        .waiting_room
        .as_ref()
        .map(|room| waiting_room::validate(path, room, starts_at_ms))
        .transpose()?;
    let regions = regions::validate(path, raw.regions.as_ref(), raw.redis.is_some())?;
    let campaign_identity_limit =
        limits::validate_identity_limit(path, raw.per_identity_limit.as_ref(), "the campaign")?;
    let mut seen: HashMap<String, (u64, u64)> = HashMap::new();
    let mut items = Vec::with_capacity(raw.items.value.len());
    for item in &raw.items.value {
        let id = &item.id;
        if !is_valid_id(&id.value) {
            return Err(at(
                path,
                id,
                format!(
                    "item id {:?} must be 1..64 characters of letters, digits, '-' or '_'",
                    id.value
                ),
            ));
        }
        let here = (id.referenced.line(), id.referenced.column());
        if let Some((line, column)) = seen.insert(id.value.clone(), here) {
            return Err(at(
                path,
                id,
                format!(
                    "duplicate item id {:?} (first defined at line {line}, column {column})",
                    id.value
                ),
            ));
        }
        let price_cents = item
            .price
            .as_ref()
            .map(|price| {
                parse_price(&price.value).map_err(|why| {
                    at(
                        path,
                        price,
                        format!("price {:?} of item {}: {why}", price.value, id.value),
                    )
                })
            })
            .transpose()?;
        let seating = match &item.seats {
            Some(raw) => Some(check_seat_item(path, item, raw, price_cents, &regions)?),
            None => None,
        };
        let (price_cents, stock) = match (&seating, price_cents, &item.stock) {
            (Some(seating), price, _) => (
                price.unwrap_or(seating.sections[0].price_cents),
                Spanned {
                    value: seating.sellable(),
                    referenced: id.referenced,
                    defined: id.defined,
                },
            ),
            (None, Some(price), Some(stock)) => (price, stock.clone()),
            (None, None, _) => {
                return Err(at(path, id, format!("item {} has no price", id.value)));
            }
            (None, _, None) => {
                return Err(at(
                    path,
                    id,
                    format!(
                        "item {} has no stock (or `seats:` for a seat item)",
                        id.value
                    ),
                ));
            }
        };
        let stock = &stock;
        if !(1..=MAX_STOCK).contains(&stock.value) {
            return Err(at(
                path,
                stock,
                format!(
                    "stock of item {} must be between 1 and {MAX_STOCK}, got {}",
                    id.value, stock.value
                ),
            ));
        }
        let buckets = match &item.buckets {
            Some(b) if !(1..=MAX_BUCKETS).contains(&b.value) => {
                return Err(at(
                    path,
                    b,
                    format!(
                        "buckets of item {} must be between 1 and {MAX_BUCKETS}, got {}",
                        id.value, b.value
                    ),
                ));
            }
            Some(b) if b.value > stock.value => {
                return Err(at(
                    path,
                    b,
                    format!(
                        "item {} has {} buckets but only {} units: every bucket needs at least one unit",
                        id.value, b.value, stock.value
                    ),
                ));
            }
            Some(b) => b.value as u32,
            None => seating.as_ref().map_or(1, |s| s.sections.len() as u32),
        };
        let waiting_room = match &item.waiting_room {
            Some(room) => Some(waiting_room::validate(path, room, starts_at_ms)?),
            None => campaign_room.clone(),
        };
        if let (Some(b), Some(room)) = (&item.buckets, &waiting_room)
            && b.value > 1
            && room.is_ticket()
            && room.registration.is_some()
        {
            return Err(at(
                path,
                b,
                format!(
                    "item {} has {} buckets and a ticket waiting room with registration: a \
                     bucket cannot read the registrations in the item's slot \
                     (docs/waiting-room.md, \"Ticket mode\"); drop buckets or registration",
                    id.value, b.value
                ),
            ));
        }
        let region_stock = regions::item_split(
            path,
            &regions,
            &id.value,
            stock,
            item.regions.as_ref(),
            buckets,
        )?;
        let per_identity_limit = limits::validate_identity_limit(
            path,
            item.per_identity_limit.as_ref(),
            &format!("item {}", id.value),
        )?
        .or(campaign_identity_limit);
        items.push(Item {
            id: id.value.clone(),
            name: item.name.clone(),
            price_cents,
            stock: stock.value,
            buckets,
            waiting_room,
            region_stock,
            seating,
            per_identity_limit,
        });
    }
    let item_ids: Vec<&str> = items.iter().map(|item| item.id.as_str()).collect();
    let limit_groups = limits::validate_groups(path, raw.limit_groups.as_ref(), &item_ids)?;
    Ok(Campaign {
        path: path.to_path_buf(),
        id: raw.campaign.value,
        redis_url: raw.redis,
        starts_at_ms,
        ends_at_ms,
        utc_offset_s,
        keep_after_end,
        per_user_limit,
        rate_limit,
        items,
        orders_store: raw.orders.map(|o| o.store),
        payment_timeout,
        rebuy_after_release: raw.rebuy_after_release.unwrap_or(true),
        regions,
        region: None,
        region_cluster: false,
        limit_groups,
    })
}

/// A seat item's map, and what a seat item cannot have: its own `stock`
/// (its seats are its stock), `buckets` (its sections are its slots), a
/// waiting room or regions (docs/seats.md, "Limits").
fn check_seat_item(
    path: &Path,
    item: &RawItem,
    raw: &RawSeats,
    price_cents: Option<i64>,
    regions: &[Region],
) -> Result<Seating> {
    let id = &item.id.value;
    if let Some(stock) = &item.stock {
        return Err(at(
            path,
            stock,
            format!("item {id} has seats: its stock is its sellable seats, so drop `stock`"),
        ));
    }
    if let Some(buckets) = &item.buckets {
        return Err(at(
            path,
            buckets,
            format!("item {id} has seats: each section is a slot of its own, so drop `buckets`"),
        ));
    }
    if item.waiting_room.is_some() || !regions.is_empty() {
        return Err(at(
            path,
            &item.id,
            format!(
                "item {id} has seats: a seat item takes no waiting room and no regions yet \
                 (docs/seats.md, \"Limits\")"
            ),
        ));
    }
    seats::validate(path, raw, id, price_cents)
}

/// Longest `payment_timeout`: a reservation is a short promise, not storage.
pub(crate) const MAX_PAYMENT_TIMEOUT: Duration = Duration::from_secs(7 * 24 * 3600);

/// `payment_timeout` is 1ms..=7 days and, with an `ends_at`, shorter than
/// `keep_after_end`: a reservation made at the last moment must still be
/// payable or releasable before the item's keys expire.
fn check_payment_timeout(
    path: &Path,
    text: &Spanned<String>,
    has_end: bool,
    keep_after_end: Duration,
) -> Result<Duration> {
    let timeout = parse_duration(path, text, "payment_timeout")?;
    if timeout.as_millis() < 1 || timeout > MAX_PAYMENT_TIMEOUT {
        return Err(at(
            path,
            text,
            "payment_timeout must be between 1ms and 7 days",
        ));
    }
    if has_end && timeout >= keep_after_end {
        return Err(at(
            path,
            text,
            format!(
                "payment_timeout {:?} must be shorter than keep_after_end ({}): reservations made just before ends_at must be paid or released before the keys expire",
                text.value,
                humantime::format_duration(keep_after_end)
            ),
        ));
    }
    Ok(timeout)
}

impl Campaign {
    /// `payment_timeout` in ms, 0 when an `ok` is final (what the buy script takes).
    pub fn payment_timeout_ms(&self) -> u64 {
        self.payment_timeout.map_or(0, |t| t.as_millis() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prices_parse_to_cents_without_floats() {
        assert_eq!(parse_price("1499.00"), Ok(149_900));
        assert_eq!(parse_price("0.1"), Ok(10));
        assert_eq!(parse_price("7"), Ok(700));
        assert!(parse_price("-1").is_err());
        assert!(parse_price("1.234").is_err());
        assert!(parse_price("abc").is_err());
    }

    #[test]
    fn ids_are_restricted() {
        assert!(is_valid_id("moutai-1111"));
        assert!(!is_valid_id(""));
        assert!(!is_valid_id("a{b}"));
        assert!(!is_valid_id(&"x".repeat(65)));
    }
}
