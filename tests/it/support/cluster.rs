//! A throwaway three-master Redis Cluster on free loopback ports, built with
//! `redis-cli --cluster create`, killed on drop.

use std::collections::HashMap;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use redis::Value;
use seckill::redis_client::conn::{Conn, ConnectionArgs, RedisTarget};

use tempfile::TempDir;

use super::spec::seckill;
use super::{CampaignFile, Frozen, RedisServer};

/// Three cluster-enabled redis-servers joined into one cluster.
pub struct RedisCluster {
    /// Killed on drop, before their directories go.
    nodes: Vec<RedisServer>,
    pub ports: Vec<u16>,
    _dir: TempDir,
}

impl RedisCluster {
    /// Start three masters, create the cluster, wait until every node says `cluster_state:ok`.
    pub fn start() -> RedisCluster {
        Self::start_with_replicas(0)
    }

    /// Three masters with `replicas` replicas each (failover drills); a
    /// node unanswered for 5 s is marked failed.
    pub fn start_with_replicas(replicas: usize) -> RedisCluster {
        Self::start_with(replicas, Duration::from_secs(5))
    }

    /// Three masters with `replicas` replicas each, a node unanswered for
    /// `node_timeout` marked failed (`cluster-node-timeout`: a long one keeps
    /// a frozen node "alive" to the cluster for the whole test).
    pub fn start_with(replicas: usize, node_timeout: Duration) -> RedisCluster {
        let node_timeout = node_timeout.as_millis().to_string();
        let dir = tempfile::tempdir().expect("tempdir");
        let ports: Vec<u16> = (0..3 * (1 + replicas))
            .map(|_| free_cluster_port())
            .collect();
        let nodes = ports
            .iter()
            .map(|port| {
                let node_dir = dir.path().join(port.to_string());
                std::fs::create_dir_all(&node_dir).unwrap();
                RedisServer::options()
                    .port(*port)
                    .dir(&node_dir)
                    .args(&[
                        "--cluster-enabled",
                        "yes",
                        "--cluster-node-timeout",
                        &node_timeout,
                    ])
                    .start()
            })
            .collect();
        let cluster = RedisCluster {
            nodes,
            ports,
            _dir: dir,
        };
        let addresses: Vec<String> = cluster
            .ports
            .iter()
            .map(|p| format!("127.0.0.1:{p}"))
            .collect();
        let status = Command::new("redis-cli")
            .arg("--cluster")
            .arg("create")
            .args(&addresses)
            .args(["--cluster-replicas", &replicas.to_string(), "--cluster-yes"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("redis-cli must be installed (apt-get install redis-tools)");
        assert!(status.success(), "redis-cli --cluster create failed");
        for port in &cluster.ports {
            wait_for(|| cluster_ok(*port), "cluster_state:ok on every node");
        }
        // A client that reads CLUSTER SLOTS (the roles without CLUSTER NODES)
        // sees a replica only once it is linked: tests start after that.
        for port in &cluster.ports {
            wait_for(
                || slots_list_every_node(*port, cluster.ports.len()),
                "every replica in CLUSTER SLOTS on every node",
            );
        }
        cluster
    }

    /// Seed URLs, comma-separated, as `--redis` takes them with `--cluster`.
    pub fn urls(&self) -> String {
        let urls: Vec<String> = self
            .ports
            .iter()
            .map(|p| format!("redis://127.0.0.1:{p}"))
            .collect();
        urls.join(",")
    }

    /// (master port, replica ports) of the node serving `key`'s slot.
    pub fn master_and_replicas_of(&self, key: &str) -> (u16, Vec<u16>) {
        self.master_and_replicas_seen_by(self.ports[0], key)
    }

    /// The same as the node on `port` sees it (ask a node that is not
    /// frozen: a frozen one never answers).
    pub fn master_and_replicas_seen_by(&self, port: u16, key: &str) -> (u16, Vec<u16>) {
        let mut conn = node(port).unwrap();
        let slot: u16 = redis::cmd("CLUSTER")
            .arg("KEYSLOT")
            .arg(key)
            .query(&mut conn)
            .unwrap();
        let nodes: String = redis::cmd("CLUSTER").arg("NODES").query(&mut conn).unwrap();
        // <id> <ip:port@bus> <flags> <master id|-> ... <slot ranges>
        let lines: Vec<Vec<&str>> = nodes
            .lines()
            .map(|l| l.split_whitespace().collect())
            .collect();
        let port_of = |fields: &Vec<&str>| -> u16 {
            fields[1].split(['@', ':']).nth(1).unwrap().parse().unwrap()
        };
        let master = lines
            .iter()
            .find(|f| {
                f[2].contains("master")
                    && f[8..].iter().any(|range| {
                        let (a, b) = range.split_once('-').unwrap_or((range, range));
                        match (a.parse::<u16>(), b.parse::<u16>()) {
                            (Ok(a), Ok(b)) => (a..=b).contains(&slot),
                            _ => false,
                        }
                    })
            })
            .expect("a master serves the slot");
        let replicas = lines
            .iter()
            .filter(|f| f[3] == master[0])
            .map(port_of)
            .collect();
        (port_of(master), replicas)
    }

    /// Two items of `campaign`, `hot` on a master that holds neither the
    /// campaign registry nor `calm`: a fault on `hot`'s master leaves the
    /// registry and the other item reachable.
    pub fn items_apart(&self, campaign: &str) -> (String, String) {
        let registry_master = self.master_and_replicas_of("seckill:campaigns").0;
        let master_of = |item: &str| {
            self.master_and_replicas_of(&seckill::model::keys::ItemKeys::live(campaign, item).stock)
                .0
        };
        let hot = (1..100)
            .map(|n| n.to_string())
            .find(|item| master_of(item) != registry_master)
            .expect("an item off the registry's master");
        let calm = (1..100)
            .map(|n| n.to_string())
            .find(|item| master_of(item) != master_of(&hot))
            .expect("an item off the hot item's master");
        (hot, calm)
    }

    /// Seed URLs with `first` first: a client that waited on it (frozen)
    /// before trying the next one shows.
    pub fn urls_from(&self, first: u16) -> String {
        let mut ports = vec![first];
        ports.extend(self.ports.iter().filter(|p| **p != first));
        ports
            .iter()
            .map(|p| format!("redis://127.0.0.1:{p}"))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The item key's master and its first replica, once gossip shows the
    /// replica and it has finished its first sync (only then can it take over).
    pub fn master_and_synced_replica(&self, key: &str) -> (u16, u16) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let (master, replicas) = self.master_and_replicas_of(key);
            if let Some(&replica) = replicas.first() {
                let synced = node(replica)
                    .and_then(|mut c| {
                        redis::cmd("INFO")
                            .arg("replication")
                            .query::<String>(&mut c)
                    })
                    .is_ok_and(|info| {
                        info.contains("master_link_status:up")
                            && info.contains("master_sync_in_progress:0")
                    });
                if synced {
                    return (master, replica);
                }
            }
            assert!(
                Instant::now() < deadline,
                "{key}'s master has no synced replica"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// SIGSTOP the node on `port` (a hang: a long fork, swap, a partition)
    /// until the guard drops.
    pub fn freeze(&self, port: u16) -> Frozen {
        Frozen::new(&mut node(port).unwrap())
    }

    /// `seckill acl --apply` of every role on every node (ACL users are per
    /// node; the default user stays the admin), as the operator is told to.
    pub fn create_roles(&self, file: &CampaignFile) -> ClusterRoles {
        let mut roles = Vec::new();
        for role in ["buyer", "consumer", "operator"] {
            let password = format!("{role}-pw-{}", std::process::id());
            let password_file = file.dir.path().join(format!("{role}.pw"));
            std::fs::write(&password_file, format!("{password}\n")).unwrap();
            for port in &self.ports {
                let path = password_file.display().to_string();
                seckill(&["acl", "--role", role, "--password-file", &path, "--apply"])
                    .campaign(file)
                    .redis_url(&format!("redis://127.0.0.1:{port}"))
                    .succeeds();
            }
            roles.push(ClusterRole {
                role,
                user: format!("seckill-{role}"),
                password,
                password_file,
            });
        }
        ClusterRoles {
            roles,
            ports: self.ports.clone(),
        }
    }

    /// Every `ACL LOG` entry of every node (what was refused, to whom), then
    /// `ACL LOG RESET`: the connection set-up of a role shows here too,
    /// even where the client ignores the refusal.
    pub fn take_acl_denials(&self) -> Vec<String> {
        let mut denials = Vec::new();
        for port in &self.ports {
            let mut conn = node(*port).unwrap();
            let entries: Vec<Vec<Value>> = redis::cmd("ACL").arg("LOG").query(&mut conn).unwrap();
            for entry in entries {
                let fields: HashMap<String, String> = entry
                    .chunks(2)
                    .filter_map(|kv| {
                        Some((
                            redis::from_redis_value_ref::<String>(&kv[0]).ok()?,
                            redis::from_redis_value_ref::<String>(&kv[1]).ok()?,
                        ))
                    })
                    .collect();
                denials.push(format!(
                    "node {port}: {} denied {} {:?} ({} times)",
                    fields.get("username").cloned().unwrap_or_default(),
                    fields.get("reason").cloned().unwrap_or_default(),
                    fields.get("object").cloned().unwrap_or_default(),
                    fields.get("count").cloned().unwrap_or_default()
                ));
            }
            let () = redis::cmd("ACL")
                .arg("LOG")
                .arg("RESET")
                .query(&mut conn)
                .unwrap();
        }
        denials
    }

    /// Kill the node listening on `port` (SIGKILL), as a crashed master.
    pub fn kill_node(&mut self, port: u16) {
        let i = self
            .ports
            .iter()
            .position(|p| *p == port)
            .expect("a node's port");
        self.nodes[i].kill();
    }

    /// Number of keys stored on the node listening on `port`.
    pub fn keys_on(&self, port: u16) -> i64 {
        redis::cmd("DBSIZE")
            .query(&mut node(port).unwrap())
            .unwrap()
    }

    /// A cluster connection as the binary opens one (`--cluster`, the seed URLs).
    pub fn conn(&self) -> Conn {
        let args = ConnectionArgs {
            redis_url: Some(self.urls()),
            cluster: true,
            ..ConnectionArgs::default()
        };
        RedisTarget::resolve(&args, None)
            .unwrap()
            .connect()
            .unwrap()
    }

    /// Master port owning each slot, from `CLUSTER SHARDS` on the first node,
    /// once its view has settled (right after `cluster create` gossip may lag
    /// behind `cluster_state:ok`): every slot owned by one of the cluster's nodes.
    pub fn slot_owners(&self) -> HashMap<u16, u16> {
        for _ in 0..100 {
            let owners = shards_view(self.ports[0]);
            if owners.len() == 16384 && owners.values().all(|p| self.ports.contains(p)) {
                return owners;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("CLUSTER SHARDS never showed every slot owned by a node of the cluster");
    }
}

/// Slot → master port, as `CLUSTER SHARDS` on the node at `port` sees it now.
fn shards_view(port: u16) -> HashMap<u16, u16> {
    let mut conn = redis::Client::open(format!("redis://127.0.0.1:{port}"))
        .unwrap()
        .get_connection()
        .unwrap();
    let shards: Vec<Value> = redis::cmd("CLUSTER")
        .arg("SHARDS")
        .query(&mut conn)
        .unwrap();
    let field = |map: &Value, name: &str| -> Value {
        let Value::Array(pairs) = map else {
            panic!("shard is not a flat map: {map:?}")
        };
        pairs
            .chunks(2)
            .find(|kv| redis::from_redis_value_ref::<String>(&kv[0]).unwrap() == name)
            .map(|kv| kv[1].clone())
            .unwrap_or_else(|| panic!("no {name} in {map:?}"))
    };
    let mut owners = HashMap::new();
    for shard in &shards {
        let slots: Vec<u16> = redis::from_redis_value(field(shard, "slots")).unwrap();
        let Value::Array(nodes) = field(shard, "nodes") else {
            panic!("nodes")
        };
        let master = nodes
            .iter()
            .find(|n| redis::from_redis_value::<String>(field(n, "role")).unwrap() == "master")
            .unwrap();
        let master_port: u16 = redis::from_redis_value(field(master, "port")).unwrap();
        for range in slots.chunks(2) {
            for slot in range[0]..=range[1] {
                owners.insert(slot, master_port);
            }
        }
    }
    owners
}

/// A free port a cluster node can use: Redis refuses ports above 55535,
/// because the cluster bus listens on port + 10000, which must be free too.
fn free_cluster_port() -> u16 {
    for _ in 0..1000 {
        let port = super::free_port();
        if port <= 55535 && std::net::TcpListener::bind(("127.0.0.1", port + 10000)).is_ok() {
            return port;
        }
    }
    panic!("no free port pair (p, p + 10000) below 55536 for a cluster node");
}

pub fn node(port: u16) -> redis::RedisResult<redis::Connection> {
    let client = redis::Client::open(format!("redis://127.0.0.1:{port}"))?;
    let conn = client.get_connection_with_timeout(Duration::from_millis(300))?;
    conn.set_read_timeout(Some(Duration::from_secs(2)))?;
    Ok(conn)
}

fn cluster_ok(port: u16) -> bool {
    node(port)
        .and_then(|mut c| redis::cmd("CLUSTER").arg("INFO").query::<String>(&mut c))
        .map(|info| info.contains("cluster_state:ok"))
        .unwrap_or(false)
}

/// `CLUSTER SLOTS` at `port` names `nodes` distinct nodes (masters and replicas).
fn slots_list_every_node(port: u16, nodes: usize) -> bool {
    let Ok(mut conn) = node(port) else {
        return false;
    };
    let Ok(ranges) = redis::cmd("CLUSTER")
        .arg("SLOTS")
        .query::<Vec<Vec<redis::Value>>>(&mut conn)
    else {
        return false;
    };
    let mut seen = std::collections::HashSet::new();
    for range in ranges {
        for entry in range.into_iter().skip(2) {
            if let Ok((host, port)) = redis::from_redis_value::<(String, u16)>(match entry {
                redis::Value::Array(fields) => {
                    redis::Value::Array(fields.into_iter().take(2).collect())
                }
                other => other,
            }) {
                seen.insert(format!("{host}:{port}"));
            }
        }
    }
    seen.len() == nodes
}

fn wait_for(mut ready: impl FnMut() -> bool, what: &str) {
    // Generous: replicas link slowly on a loaded 2-core machine.
    let deadline = Instant::now() + Duration::from_secs(90);
    while Instant::now() < deadline {
        if ready() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("timed out waiting for {what}");
}

/// One role's user on every node of a cluster.
pub struct ClusterRole {
    pub role: &'static str,
    pub user: String,
    pub password: String,
    /// The password in a file (with a final newline, as `openssl rand` writes it).
    pub password_file: std::path::PathBuf,
}

/// The three roles `seckill acl` generates, applied on every node.
pub struct ClusterRoles {
    roles: Vec<ClusterRole>,
    ports: Vec<u16>,
}

impl ClusterRoles {
    /// The role named `role` (`buyer`, `consumer`, `operator`).
    pub fn get(&self, role: &str) -> &ClusterRole {
        self.roles
            .iter()
            .find(|r| r.role == role)
            .unwrap_or_else(|| panic!("no role {role}"))
    }

    /// Seed URLs with the role's user and password in each, every node.
    pub fn seeds(&self, role: &str) -> String {
        self.urls(role, self.ports[0])
    }

    /// Seed URLs with the role's user but no password (given apart:
    /// `--redis-password-file`, `REDISCLI_AUTH`), every node.
    pub fn seeds_without_password(&self, role: &str) -> String {
        let role = self.get(role);
        self.ports
            .iter()
            .map(|p| format!("redis://{}@127.0.0.1:{p}", role.user))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Seed URLs with the role's user and password in each, `first` first.
    pub fn urls(&self, role: &str, first: u16) -> String {
        let role = self.get(role);
        let mut ports = vec![first];
        ports.extend(self.ports.iter().filter(|p| **p != first));
        ports
            .iter()
            .map(|p| format!("redis://{}:{}@127.0.0.1:{p}", role.user, role.password))
            .collect::<Vec<_>>()
            .join(",")
    }
}
