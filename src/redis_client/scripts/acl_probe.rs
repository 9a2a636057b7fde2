//! `lua/acl_probe.lua`: whether the caller may run given commands on one
//! slot's reservation keys, asked of Redis's ACL without running them. Its
//! call, and the checks that prove a credential can pay and cancel
//! ([`checks_of`] the scripts' own source).

use redis::{ConnectionLike, Value};

use super::{ScriptCall, Spec};

super::script_call! {
    /// Probe the ACL: KEYS then the checks of `lua/acl_probe.lua`.
    AclProbe = "acl_probe.lua", Sale;
    roles { operator }
    keys { reservations, deadlines, meta, stock, buyers, buyer_orders, orders, reservation_counts }
    argv {}
    rest { checks }
}

impl AclProbe<String> {
    /// The checks Redis refuses to the caller (none: it may run them all).
    pub(crate) fn refused<C: ConnectionLike>(
        &self,
        conn: &mut C,
    ) -> redis::RedisResult<Vec<String>> {
        let reply: Value = self.invoke(conn)?;
        Ok(redis::from_redis_value(reply.extract_error()?)?)
    }
}

/// The probe's checks for what `scripts` send on their KEYS: every
/// `'CMD'[, 'SUB'], KEYS[n]` of their source (the writes each lists for its
/// own ACL check before the first write, lua/lib/acl.lua, and its direct
/// reads), and every keyless `'CMD'` call (`TIME`). Their keys are matched to
/// the probe's by name, so only scripts on the reservation keys fit.
pub(crate) fn checks_of(scripts: &[&Spec]) -> Vec<String> {
    let mut checks: Vec<String> = Vec::new();
    for spec in scripts {
        let code = spec
            .source
            .lines()
            .map(without_comment)
            .collect::<Vec<_>>()
            .join("\n");
        let mut rest = code.as_str();
        while let Some((word, after)) = quoted(rest) {
            rest = after;
            if !is_command(word) {
                continue;
            }
            let mut words = vec![word.to_string()];
            let mut tail = after;
            if let Some(next) = tail.strip_prefix(", '")
                && let Some(end) = next.find('\'')
                && is_command(&next[..end])
            {
                words.push(next[..end].to_string());
                tail = &next[end + 1..];
            }
            let check = if tail.starts_with(')') {
                words.join(" ")
            } else if let Some(index) = tail
                .strip_prefix(", KEYS[")
                .and_then(|t| t.split_once(']'))
                .and_then(|(n, _)| n.parse::<usize>().ok())
            {
                let name = spec.keys.get(index.wrapping_sub(1));
                let Some(at) = name.and_then(|name| SPEC.keys.iter().position(|k| k == name))
                else {
                    continue;
                };
                format!("{} KEYS[{}]", words.join(" "), at + 1)
            } else {
                continue;
            };
            if !checks.contains(&check) {
                checks.push(check);
            }
        }
    }
    checks
}

/// A check as people read it: `ZREM deadlines` for `ZREM KEYS[2]`.
pub(crate) fn spelled(check: &str) -> String {
    check
        .split(' ')
        .map(|word| {
            word.strip_prefix("KEYS[")
                .and_then(|w| w.strip_suffix(']'))
                .and_then(|n| n.parse::<usize>().ok())
                .and_then(|n| SPEC.keys.get(n.wrapping_sub(1)))
                .map_or(word, |name| *name)
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A line of Lua without its `--` comment and with its double-quoted
/// strings emptied (an apostrophe in `"can't"` would pair the wrong quotes).
fn without_comment(line: &str) -> String {
    let (mut code, mut single, mut double) = (String::new(), false, false);
    for (at, c) in line.char_indices() {
        match c {
            '"' if !single => {
                double = !double;
                code.push(c);
            }
            _ if double => {}
            '\'' => {
                single = !single;
                code.push(c);
            }
            '-' if !single && line[at..].starts_with("--") => break,
            _ => code.push(c),
        }
    }
    code
}

/// The next single-quoted string of `text` and what follows it.
fn quoted(text: &str) -> Option<(&str, &str)> {
    let start = text.find('\'')? + 1;
    let end = start + text[start..].find('\'')?;
    Some((&text[start..end], &text[end + 1..]))
}

fn is_command(word: &str) -> bool {
    !word.is_empty() && word.bytes().all(|b| b.is_ascii_uppercase())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::redis_client::scripts::{pay, release};

    #[test]
    fn the_checks_cover_every_write_of_pay_and_release_on_its_own_key() {
        let checks = checks_of(&[&pay::SPEC, &release::SPEC]);
        for expected in [
            "XADD KEYS[7]",
            "HSET KEYS[1]",
            "ZREM KEYS[2]",
            "ZADD KEYS[2]",
            "INCRBY KEYS[4]",
            "HDEL KEYS[3]",
            "HINCRBY KEYS[8]",
            "HINCRBY KEYS[5]",
            "HDEL KEYS[6]",
            "HGET KEYS[1]",
            "TIME",
        ] {
            assert!(
                checks.contains(&expected.to_string()),
                "{expected} not in {checks:?}"
            );
        }
        assert_eq!(without_comment("a('--') -- b"), "a('--') ");
        assert_eq!(
            without_comment("error(\"can't\") x('T')"),
            "error(\"\") x('T')"
        );
        assert_eq!(spelled("ZREM KEYS[2]"), "ZREM deadlines");
    }
}
