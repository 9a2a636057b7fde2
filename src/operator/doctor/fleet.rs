//! Every node behind the target, each on a connection of its own as the
//! URL's user: the standalone Redis and its replicas (from `INFO
//! replication`), or every master and replica of a cluster (from `CLUSTER
//! NODES`, else `CLUSTER SLOTS`, read from the first seed that answers). A
//! failover promotes a replica: its eviction policy, persistence, memory and
//! users decide the sale as much as its master's do, so `doctor` reads them
//! all. A node that cannot be read is said, never skipped: a check that
//! reached no node is a no-go.

use anyhow::{Result, anyhow};
use redis::Value;

use crate::operator::acl::dryrun;
use crate::redis_client::conn::Conn;
use crate::redis_client::failure;
use crate::util::error_text::render;

/// What a node is in its topology.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Kind {
    Master,
    /// A replica of the master at this address.
    Replica(String),
}

/// One node and its connection.
pub(crate) struct Node {
    /// `host:port`.
    pub(crate) addr: String,
    pub(crate) kind: Kind,
    /// The cluster's word on a node it thinks down (`fail`, `fail?`,
    /// `link disconnected`); `None` when it is fine or not a cluster node.
    pub(crate) trouble: Option<String>,
    /// Slot ranges a cluster master serves.
    pub(crate) slots: Vec<(u16, u16)>,
    /// The connection as the URL's user, or why there is none.
    pub(crate) conn: std::result::Result<Conn, String>,
    /// What the user may send there, asked once per command (the probe).
    allowed: Vec<(String, bool)>,
}

impl Node {
    fn new(addr: String, kind: Kind, conn: std::result::Result<Conn, String>) -> Node {
        Node {
            addr,
            kind,
            trouble: None,
            slots: Vec::new(),
            conn,
            allowed: Vec::new(),
        }
    }

    /// Whether the user may send `words` here (the probe, once per
    /// command); `true` when it cannot tell (the command then says).
    fn may(&mut self, words: &[&str]) -> std::result::Result<bool, String> {
        let conn = match &mut self.conn {
            Err(why) => return Err(why.clone()),
            Ok(conn) => conn,
        };
        if words.is_empty() {
            return Ok(true);
        }
        let key = words.join(" ");
        if let Some((_, allowed)) = self.allowed.iter().find(|(k, _)| *k == key) {
            return Ok(*allowed);
        }
        let allowed = dryrun::may_send(conn, words).unwrap_or(true);
        self.allowed.push((key, allowed));
        Ok(allowed)
    }

    /// `master 127.0.0.1:7001`, `replica 127.0.0.1:7004`.
    pub(crate) fn named(&self) -> String {
        match self.kind {
            Kind::Master => format!("master {}", self.addr),
            Kind::Replica(_) => format!("replica {}", self.addr),
        }
    }
}

/// Which nodes a check reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Nodes {
    Masters,
    All,
    /// Every node; when the topology could not be read, the seeds that
    /// answered (a user's own permissions can be asked there).
    KnownOrSeeds,
}

/// Why a node gave no answer.
#[derive(Debug, Clone)]
pub(crate) enum Why {
    /// No connection to it, or no reply (down, frozen, a wrong password).
    Unreachable(String),
    /// The user's ACL refused the command (`NOPERM`): the check cannot be made as this user.
    Refused(String),
    /// Any other error.
    Failed(String),
}

/// One node's answer to a check's question.
pub(crate) struct Reading<T> {
    pub(crate) node: String,
    pub(crate) kind: Kind,
    pub(crate) value: std::result::Result<T, Why>,
}

/// The nodes behind the target.
pub(crate) struct Fleet {
    pub(crate) cluster: bool,
    pub(crate) nodes: Vec<Node>,
    /// Why the list of nodes is unknown or incomplete (the topology could
    /// not be read as this user).
    pub(crate) unknown: Option<String>,
    /// The seeds that took a connection when the topology could not be read
    /// from them: what the user's own permissions can still be asked on.
    pub(crate) seeds: Vec<Node>,
}

/// How to reach the nodes.
pub(crate) struct Reach<'a> {
    /// Whether the target is a Redis Cluster.
    pub(crate) cluster: bool,
    /// `host:port` of each seed (the URL list).
    pub(crate) seeds: &'a [String],
    /// The target itself, as one connection (a standalone Redis).
    pub(crate) target: &'a dyn Fn() -> Result<Conn>,
    /// A connection to one node (`host:port`) with the URL's user, password and TLS.
    pub(crate) node: &'a dyn Fn(&str) -> Result<Conn>,
}

impl Fleet {
    /// Find every node and open a connection to each.
    pub(crate) fn discover(reach: &Reach) -> Fleet {
        if reach.cluster {
            cluster(reach)
        } else {
            standalone(reach)
        }
    }

    /// The masters' addresses.
    pub(crate) fn masters(&self) -> impl Iterator<Item = &Node> {
        self.nodes.iter().filter(|n| n.kind == Kind::Master)
    }

    /// The master serving `slot` (on a standalone Redis: the one master).
    pub(crate) fn owner_of(&self, slot: u16) -> Option<&str> {
        if !self.cluster {
            return self.masters().next().map(|n| n.addr.as_str());
        }
        self.masters()
            .find(|n| n.slots.iter().any(|(lo, hi)| (*lo..=*hi).contains(&slot)))
            .map(|n| n.addr.as_str())
    }

    /// `ask` on each node of `which` (each seed that answered, for
    /// [`Nodes::KnownOrSeeds`] when the nodes are unknown). `sends` names
    /// the command `ask` sends: a node where the user may not send it is
    /// not asked (its refusal would only fill `ACL LOG`), it is refused.
    pub(crate) fn read<T>(
        &mut self,
        which: Nodes,
        sends: &[&str],
        mut ask: impl FnMut(&mut Conn) -> Result<T>,
    ) -> Vec<Reading<T>> {
        let nodes = match which {
            Nodes::KnownOrSeeds if self.nodes.is_empty() => &mut self.seeds,
            _ => &mut self.nodes,
        };
        nodes
            .iter_mut()
            .filter(|n| which != Nodes::Masters || n.kind == Kind::Master)
            .map(|node| Reading {
                node: node.addr.clone(),
                kind: node.kind.clone(),
                value: match node.may(sends) {
                    Err(why) => Err(Why::Unreachable(why)),
                    Ok(false) => Err(Why::Refused(format!(
                        "{}: refused to this user",
                        sends.join(" ")
                    ))),
                    Ok(true) => match &mut node.conn {
                        Err(why) => Err(Why::Unreachable(why.clone())),
                        Ok(conn) => ask(conn).map_err(|e| why_of(&e)),
                    },
                },
            })
            .collect()
    }

    /// Counted by kind: `3 masters, 3 replicas`, `1 master`.
    pub(crate) fn census(&self) -> String {
        let masters = self.masters().count();
        let replicas = self.nodes.len() - masters;
        let plural = |n: usize| if n == 1 { "" } else { "s" };
        match replicas {
            0 => format!("{masters} master{}", plural(masters)),
            _ => format!(
                "{masters} master{}, {replicas} replica{}",
                plural(masters),
                plural(replicas)
            ),
        }
    }
}

/// What an error means for a check.
pub(crate) fn why_of(error: &anyhow::Error) -> Why {
    let text = render(error);
    match failure::find(error) {
        Some(e) if e.code() == Some("NOPERM") => Why::Refused(text),
        Some(e) if e.is_io_error() || e.is_timeout() || e.is_connection_dropped() => {
            Why::Unreachable(text)
        }
        _ => Why::Failed(text),
    }
}

fn open(reach: &Reach, addr: &str) -> std::result::Result<Conn, String> {
    (reach.node)(addr).map_err(|e| render(&e))
}

fn standalone(reach: &Reach) -> Fleet {
    let addr = reach.seeds.first().cloned().unwrap_or_default();
    let mut master = Node::new(addr, Kind::Master, (reach.target)().map_err(|e| render(&e)));
    let mut unknown = None;
    let mut replicas = Vec::new();
    let may_read = master.may(&["INFO", "replication"]);
    match (&mut master.conn, may_read) {
        (Err(why), _) => unknown = Some(format!("the master does not answer: {why}")),
        (Ok(_), Ok(false)) => {
            unknown = Some(
                "its replicas cannot be listed (INFO replication is refused to this user)"
                    .to_string(),
            )
        }
        (Ok(conn), _) => {
            let info: redis::RedisResult<String> =
                redis::cmd("INFO").arg("replication").query(conn);
            match info {
                Err(e) => {
                    unknown = Some(format!(
                        "its replicas cannot be listed (INFO replication: {e})"
                    ))
                }
                Ok(text) => {
                    for (_, line) in crate::redis_client::server::parse_info(&text)
                        .into_iter()
                        .filter(|(field, _)| {
                            field.starts_with("slave") && field[5..].parse::<u32>().is_ok()
                        })
                    {
                        let field = |name: &str| {
                            line.split(',')
                                .find_map(|kv| kv.strip_prefix(&format!("{name}=")))
                                .unwrap_or("")
                                .to_string()
                        };
                        let addr = format!("{}:{}", field("ip"), field("port"));
                        let conn = open(reach, &addr);
                        replicas.push(Node::new(addr, Kind::Replica(master.addr.clone()), conn));
                    }
                }
            }
        }
    }
    let mut nodes = vec![master];
    nodes.extend(replicas);
    Fleet {
        cluster: false,
        nodes,
        unknown,
        seeds: Vec::new(),
    }
}

/// One node as the topology describes it, before connecting.
struct Described {
    addr: String,
    kind: Kind,
    trouble: Option<String>,
    slots: Vec<(u16, u16)>,
}

fn cluster(reach: &Reach) -> Fleet {
    let mut why_not = Vec::new();
    let mut answered = Vec::new();
    for seed in reach.seeds {
        let mut conn = match open(reach, seed) {
            Ok(conn) => conn,
            Err(why) => {
                why_not.push(format!("{seed}: {why}"));
                continue;
            }
        };
        let described = match topology(&mut conn) {
            Ok(described) => described,
            Err(why) => {
                why_not.push(format!("{seed}: {why}"));
                answered.push(Node::new(seed.clone(), Kind::Master, Ok(conn)));
                continue;
            }
        };
        let mut seed_conn = Some(conn);
        let nodes = described
            .into_iter()
            .map(|d| {
                let conn = match (&d.addr == seed, seed_conn.take()) {
                    (true, Some(conn)) => Ok(conn),
                    (_, unused) => {
                        seed_conn = unused;
                        open(reach, &d.addr)
                    }
                };
                Node {
                    trouble: d.trouble,
                    slots: d.slots,
                    ..Node::new(d.addr, d.kind, conn)
                }
            })
            .collect();
        return Fleet {
            cluster: true,
            nodes,
            unknown: None,
            seeds: Vec::new(),
        };
    }
    Fleet {
        cluster: true,
        nodes: Vec::new(),
        unknown: Some(format!(
            "the cluster's nodes could not be read from any seed ({})",
            why_not.join("; ")
        )),
        seeds: answered,
    }
}

/// The nodes, from `CLUSTER NODES` (every node, with the cluster's view of
/// its health), else `CLUSTER SLOTS` (the masters and the replicas it
/// deems healthy).
fn topology(conn: &mut Conn) -> std::result::Result<Vec<Described>, String> {
    // Asked first: a role without CLUSTER NODES leaves nothing in ACL LOG.
    let refused = if dryrun::may_send(conn, &["CLUSTER", "NODES"]).unwrap_or(true) {
        let nodes: redis::RedisResult<String> = redis::cmd("CLUSTER").arg("NODES").query(conn);
        match nodes {
            Ok(text) => return parse_nodes(&text),
            Err(e) if e.code() == Some("NOPERM") => e.to_string(),
            Err(e) => return Err(format!("CLUSTER NODES: {e}")),
        }
    } else {
        "refused to this user".to_string()
    };
    if !dryrun::may_send(conn, &["CLUSTER", "SLOTS"]).unwrap_or(true) {
        return Err(format!(
            "CLUSTER NODES: {refused}; CLUSTER SLOTS: refused to this user"
        ));
    }
    let slots: redis::RedisResult<Value> = redis::cmd("CLUSTER").arg("SLOTS").query(conn);
    match slots {
        Ok(reply) => parse_slots(reply),
        Err(e) => Err(format!("CLUSTER NODES: {refused}; CLUSTER SLOTS: {e}")),
    }
}

/// `CLUSTER NODES`: `<id> <ip:port@cport[,host]> <flags> <master id|-> <ping>
/// <pong> <epoch> <link> <slot>...`.
fn parse_nodes(text: &str) -> std::result::Result<Vec<Described>, String> {
    let lines: Vec<Vec<&str>> = text
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|f| f.len() >= 8)
        .collect();
    let addr_of = |field: &str| field.split(['@', ',']).next().unwrap_or("").to_string();
    let by_id = |id: &str| lines.iter().find(|f| f[0] == id).map(|f| addr_of(f[1]));
    let mut described = Vec::new();
    for fields in &lines {
        let flags: Vec<&str> = fields[2].split(',').collect();
        if flags.iter().any(|f| matches!(*f, "handshake" | "noaddr")) {
            continue;
        }
        let kind = if flags.contains(&"master") {
            Kind::Master
        } else if flags.contains(&"slave") {
            Kind::Replica(by_id(fields[3]).unwrap_or_else(|| fields[3].to_string()))
        } else {
            continue;
        };
        let mut trouble: Vec<String> = flags
            .iter()
            .filter(|f| matches!(**f, "fail" | "fail?"))
            .map(|f| f.to_string())
            .collect();
        if fields[7] != "connected" {
            trouble.push(format!("link {}", fields[7]));
        }
        let slots = fields[8..]
            .iter()
            .filter(|range| !range.starts_with('['))
            .filter_map(|range| {
                let (lo, hi) = range.split_once('-').unwrap_or((range, range));
                Some((lo.parse().ok()?, hi.parse().ok()?))
            })
            .collect();
        described.push(Described {
            addr: addr_of(fields[1]),
            kind,
            trouble: (!trouble.is_empty()).then(|| trouble.join(", ")),
            slots,
        });
    }
    if described.is_empty() {
        return Err("CLUSTER NODES named no node".to_string());
    }
    described
        .sort_by(|a, b| (a.kind != Kind::Master, &a.addr).cmp(&(b.kind != Kind::Master, &b.addr)));
    Ok(described)
}

/// `CLUSTER SLOTS`: `[[first, last, [host, port, id], [replica...]...]...]`.
fn parse_slots(reply: Value) -> std::result::Result<Vec<Described>, String> {
    let ranges: Vec<Vec<Value>> =
        redis::from_redis_value(reply).map_err(|e| format!("CLUSTER SLOTS: {e}"))?;
    let address = |node: &Value| -> Option<String> {
        let parts: Vec<Value> = redis::from_redis_value(node.clone()).ok()?;
        let host: String = redis::from_redis_value(parts.first()?.clone()).ok()?;
        let port: u16 = redis::from_redis_value(parts.get(1)?.clone()).ok()?;
        Some(format!("{host}:{port}"))
    };
    let mut described: Vec<Described> = Vec::new();
    for range in ranges {
        let (Some(lo), Some(hi)) = (range.first(), range.get(1)) else {
            continue;
        };
        let (Ok(lo), Ok(hi)) = (
            redis::from_redis_value::<u16>(lo.clone()),
            redis::from_redis_value::<u16>(hi.clone()),
        ) else {
            continue;
        };
        let Some(master) = range.get(2).and_then(address) else {
            continue;
        };
        match described.iter_mut().find(|d| d.addr == master) {
            Some(known) => known.slots.push((lo, hi)),
            None => described.push(Described {
                addr: master.clone(),
                kind: Kind::Master,
                trouble: None,
                slots: vec![(lo, hi)],
            }),
        }
        for replica in range.iter().skip(3).filter_map(address) {
            if !described.iter().any(|d| d.addr == replica) {
                described.push(Described {
                    addr: replica,
                    kind: Kind::Replica(master.clone()),
                    trouble: None,
                    slots: Vec::new(),
                });
            }
        }
    }
    if described.is_empty() {
        return Err("CLUSTER SLOTS named no node".to_string());
    }
    described
        .sort_by(|a, b| (a.kind != Kind::Master, &a.addr).cmp(&(b.kind != Kind::Master, &b.addr)));
    Ok(described)
}

/// `url` (`scheme://[user[:password]@]host:port[/db][?query]`) with its
/// host and port replaced by `addr`: the same user, password, TLS and
/// database on another node. `None` for a URL without a host (a Unix socket).
pub(crate) fn url_of_node(url: &str, addr: &str) -> Option<String> {
    let scheme_end = url.find("://")? + 3;
    let (scheme, rest) = url.split_at(scheme_end);
    if scheme.starts_with("unix") || scheme.starts_with("redis+unix") {
        return None;
    }
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let credentials = match authority.rfind('@') {
        Some(at) => &authority[..=at],
        None => "",
    };
    Some(format!("{scheme}{credentials}{addr}{tail}"))
}

/// `host:port` of a URL, as the topology names nodes.
pub(crate) fn addr_of_url(url: &str) -> Result<String> {
    use redis::IntoConnectionInfo;
    let info = url
        .into_connection_info()
        .map_err(|e| anyhow!("invalid Redis URL: {e}"))?;
    match info.addr() {
        redis::ConnectionAddr::Tcp(host, port)
        | redis::ConnectionAddr::TcpTls { host, port, .. } => Ok(format!("{host}:{port}")),
        other => Ok(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_url_keeps_user_password_tls_and_database() {
        assert_eq!(
            url_of_node("redis://u:p@w@h:1/3?x=1", "10.0.0.2:7002").unwrap(),
            "redis://u:p@w@10.0.0.2:7002/3?x=1"
        );
        assert_eq!(
            url_of_node("rediss://h:1", "10.0.0.2:7002").unwrap(),
            "rediss://10.0.0.2:7002"
        );
        assert_eq!(url_of_node("unix:///tmp/r.sock", "h:1"), None);
    }

    #[test]
    fn cluster_nodes_name_every_node_and_its_health() {
        let text = "\
a1 127.0.0.1:7001@17001 myself,master - 0 0 1 connected 0-5460
b2 127.0.0.1:7002@17002 master - 0 0 2 connected 5461-10922 [77->-a1]
c3 127.0.0.1:7003@17003,host3 master - 0 0 3 connected 10923-16383
d4 127.0.0.1:7004@17004 slave a1 0 0 1 connected
e5 127.0.0.1:7005@17005 slave,fail b2 0 0 2 disconnected
f6 127.0.0.1:7006@17006 handshake - 0 0 0 connected
";
        let nodes = parse_nodes(text).unwrap();
        let addrs: Vec<&str> = nodes.iter().map(|n| n.addr.as_str()).collect();
        assert_eq!(
            addrs,
            [
                "127.0.0.1:7001",
                "127.0.0.1:7002",
                "127.0.0.1:7003",
                "127.0.0.1:7004",
                "127.0.0.1:7005"
            ]
        );
        assert_eq!(nodes[1].slots, [(5461, 10922)]);
        assert_eq!(nodes[3].kind, Kind::Replica("127.0.0.1:7001".into()));
        assert_eq!(nodes[4].trouble.as_deref(), Some("fail, link disconnected"));
        assert_eq!(nodes[3].trouble, None);
    }
}
