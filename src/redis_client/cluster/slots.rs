//! Which master serves which slot: the answer to `CLUSTER SLOTS`, read from
//! one node, and the nodes named in it. Replicas are read past, never kept:
//! nothing of seckill is sent to a replica.

use std::collections::BTreeSet;

use redis::Value;

/// Slots of a Redis Cluster.
pub(crate) const SLOTS: u16 = 16384;

/// One node of the cluster, as `host:port`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Node {
    pub(crate) host: String,
    pub(crate) port: u16,
}

impl Node {
    pub(crate) fn new(host: impl Into<String>, port: u16) -> Node {
        Node {
            host: host.into(),
            port,
        }
    }

    /// `host:port` (an IPv6 host in brackets) as a redirect names it; an
    /// empty or `?` host is the host of the node that sent the redirect.
    pub(crate) fn parse(text: &str, sender: &Node) -> Option<Node> {
        let (host, port) = text.rsplit_once(':')?;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let host = match host {
            "" | "?" => sender.host.as_str(),
            host => host,
        };
        Some(Node::new(host, port.parse().ok()?))
    }
}

impl std::fmt::Display for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

/// Slot ranges and their masters, in slot order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SlotMap {
    ranges: Vec<(u16, u16, Node)>,
}

impl SlotMap {
    /// The map of a `CLUSTER SLOTS` reply from `asked`: `[[first, last,
    /// [host, port, id...], replica...], ...]`. A master without an address
    /// (`""`, `?`) is the node asked.
    pub(crate) fn parse(reply: &Value, asked: &Node) -> Result<SlotMap, String> {
        let Value::Array(ranges) = reply else {
            return Err(format!("CLUSTER SLOTS answered {reply:?}"));
        };
        let mut parsed = Vec::with_capacity(ranges.len());
        for range in ranges {
            let Value::Array(fields) = range else {
                return Err(format!("a CLUSTER SLOTS range is {range:?}"));
            };
            let number = |at: usize| -> Option<u16> {
                match fields.get(at)? {
                    Value::Int(n) => u16::try_from(*n).ok().filter(|n| *n < SLOTS),
                    _ => None,
                }
            };
            let (Some(first), Some(last)) = (number(0), number(1)) else {
                return Err(format!(
                    "a CLUSTER SLOTS range has no slot numbers: {range:?}"
                ));
            };
            let Some(Value::Array(master)) = fields.get(2) else {
                return Err(format!(
                    "slots {first}-{last} have no master in CLUSTER SLOTS"
                ));
            };
            let host = match master.first() {
                Some(Value::BulkString(host)) => String::from_utf8_lossy(host).into_owned(),
                Some(Value::SimpleString(host)) => host.clone(),
                _ => String::new(),
            };
            let port = match master.get(1) {
                Some(Value::Int(port)) => u16::try_from(*port).ok(),
                _ => None,
            };
            let Some(port) = port else {
                return Err(format!("slots {first}-{last}: their master has no port"));
            };
            let host = match host.as_str() {
                "" | "?" => asked.host.clone(),
                _ => host,
            };
            parsed.push((first.min(last), first.max(last), Node::new(host, port)));
        }
        if parsed.is_empty() {
            return Err(format!(
                "{asked} serves no slot (CLUSTER SLOTS is empty): is the cluster created?"
            ));
        }
        parsed.sort_by_key(|(first, _, _)| *first);
        Ok(SlotMap { ranges: parsed })
    }

    /// The master serving `slot`, if any does.
    pub(crate) fn master_of(&self, slot: u16) -> Option<&Node> {
        let at = self.ranges.partition_point(|(first, _, _)| *first <= slot);
        let (_, last, node) = self.ranges.get(at.checked_sub(1)?)?;
        (slot <= *last).then_some(node)
    }

    /// Every master, once each, in address order.
    pub(crate) fn masters(&self) -> Vec<Node> {
        let masters: BTreeSet<&Node> = self.ranges.iter().map(|(_, _, node)| node).collect();
        masters.into_iter().cloned().collect()
    }

    /// Whether `node` serves any slot.
    pub(crate) fn is_master(&self, node: &Node) -> bool {
        self.ranges.iter().any(|(_, _, master)| master == node)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(first: i64, last: i64, host: &str, port: i64) -> Value {
        Value::Array(vec![
            Value::Int(first),
            Value::Int(last),
            Value::Array(vec![
                Value::BulkString(host.as_bytes().to_vec()),
                Value::Int(port),
                Value::BulkString(b"id".to_vec()),
            ]),
            // A replica: read past.
            Value::Array(vec![
                Value::BulkString(b"10.0.0.9".to_vec()),
                Value::Int(7009),
            ]),
        ])
    }

    #[test]
    fn each_slot_has_its_master_and_replicas_are_not_kept() {
        let asked = Node::new("10.0.0.1", 7001);
        let reply = Value::Array(vec![
            range(5461, 10922, "10.0.0.2", 7002),
            range(0, 5460, "", 7001),
            range(10923, 16383, "10.0.0.3", 7003),
        ]);
        let map = SlotMap::parse(&reply, &asked).unwrap();
        assert_eq!(map.master_of(0), Some(&asked));
        assert_eq!(map.master_of(5460), Some(&asked));
        assert_eq!(map.master_of(5461), Some(&Node::new("10.0.0.2", 7002)));
        assert_eq!(map.master_of(16383), Some(&Node::new("10.0.0.3", 7003)));
        assert_eq!(map.masters().len(), 3);
        assert!(!map.is_master(&Node::new("10.0.0.9", 7009)));
        let partial = SlotMap::parse(&Value::Array(vec![range(0, 99, "h", 1)]), &asked).unwrap();
        assert_eq!(partial.master_of(100), None);
        assert!(SlotMap::parse(&Value::Array(vec![]), &asked).is_err());
    }

    #[test]
    fn redirect_addresses_parse() {
        let sender = Node::new("10.0.0.1", 7001);
        assert_eq!(
            Node::parse("10.0.0.2:7002", &sender),
            Some(Node::new("10.0.0.2", 7002))
        );
        assert_eq!(
            Node::parse(":7003", &sender),
            Some(Node::new("10.0.0.1", 7003))
        );
        assert_eq!(
            Node::parse("[::1]:7004", &sender),
            Some(Node::new("::1", 7004))
        );
        assert_eq!(Node::new("::1", 7004).to_string(), "[::1]:7004");
        assert_eq!(Node::parse("nonsense", &sender), None);
    }
}
