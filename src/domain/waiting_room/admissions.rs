//! A bucket's copy of the waiting room's admissions (docs/waiting-room.md):
//! a bucketed item's buy runs in the user's home bucket, which cannot read
//! the room in the item's slot, so the fan-out (`waiting_room::admit`)
//! carries each admission there — through `lua/bucket_admit.lua`, which
//! grants a user at most once however often a crashed fan-out repeats itself.

use anyhow::{Context, Result};
use redis::{Commands, ConnectionLike};

use crate::model::layout::BucketKeys;
use crate::redis_client::scripts::ScriptCall;
use crate::redis_client::scripts::bucket_admit::{self, BucketAdmit};

/// One admission to carry: the user, its start and end (Unix ms, Redis clock).
pub(crate) type Grant = (String, i64, i64);

/// Grant `grants` in `bucket` (their users' home); returns how many were
/// new there and the bucket's count of grants after.
pub(crate) fn grant<C: ConnectionLike>(
    conn: &mut C,
    bucket: &BucketKeys,
    grants: &[Grant],
    expire_at_ms: Option<i64>,
) -> Result<(i64, i64)> {
    let room = bucket.keys.room();
    let entry = grants
        .iter()
        .flat_map(|(user, from, to)| [user.clone(), from.to_string(), to.to_string()])
        .collect();
    BucketAdmit {
        admissions: room.admissions,
        admission_count: room.admission_count,
        mode: "grant".to_string(),
        expire_at_ms: expire_at_ms.map_or(String::new(), |ms| ms.to_string()),
        entry,
    }
    .invoke(conn)
    .map_err(anyhow::Error::from)
    .and_then(bucket_admit::parse_reply)
    .with_context(|| format!("cannot grant admissions in bucket {}", bucket.bucket))
}

/// Take back `user`'s admission in `bucket` (a block).
pub(crate) fn revoke<C: ConnectionLike>(
    conn: &mut C,
    bucket: &BucketKeys,
    user: &str,
) -> Result<()> {
    let room = bucket.keys.room();
    BucketAdmit {
        admissions: room.admissions,
        admission_count: room.admission_count,
        mode: "revoke".to_string(),
        expire_at_ms: String::new(),
        entry: vec![user.to_string()],
    }
    .invoke(conn)
    .map_err(anyhow::Error::from)
    .and_then(bucket_admit::parse_reply)
    .with_context(|| {
        format!(
            "cannot revoke the admission of {user} in bucket {}",
            bucket.bucket
        )
    })?;
    Ok(())
}

/// The bucket's admissions and grants ever made: (held now, granted in all).
pub(crate) fn counts<C: ConnectionLike>(conn: &mut C, bucket: &BucketKeys) -> Result<(i64, i64)> {
    let room = bucket.keys.room();
    let held: i64 = conn
        .hlen(&room.admissions)
        .with_context(|| format!("cannot read {}", room.admissions))?;
    let granted: Option<i64> = conn
        .get(&room.admission_count)
        .with_context(|| format!("cannot read {}", room.admission_count))?;
    Ok((held, granted.unwrap_or(0)))
}
