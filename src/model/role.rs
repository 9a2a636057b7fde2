//! The jobs `seckill` runs against Redis, each under its own Redis user
//! (docs/security.md): the buyer, the consumer and the operator. Which
//! scripts each one runs is written beside each script's typed call
//! (`redis_client::scripts`, its `roles { ... }` line), not here.

use serde::Serialize;

/// A job `seckill` runs, with its own Redis user.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The web tier: `buy`, `serve`, the waiting room's `queue join` and
    /// `register`. (`rebalance` is the operator's job; it sends only the
    /// buyer's sweep scripts, so a buyer credential could run it too.)
    Buyer,
    /// `consume` and `pending-claim`: the order streams into the database.
    Consumer,
    /// Everything else: preheat, init, the kill switch, reconcile, pay, cancel, expire, loadtest.
    Operator,
}

impl Role {
    /// Every role, in the order the docs list them.
    pub const ALL: [Role; 3] = [Role::Buyer, Role::Consumer, Role::Operator];

    /// `buyer`, `consumer`, `operator`.
    pub fn name(self) -> &'static str {
        match self {
            Role::Buyer => "buyer",
            Role::Consumer => "consumer",
            Role::Operator => "operator",
        }
    }

    /// The user name when none is given: `seckill-buyer`, ...
    pub fn default_user(self) -> String {
        format!("seckill-{}", self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_what_the_command_line_and_json_spell() {
        for role in Role::ALL {
            let json = serde_json::to_string(&role).unwrap();
            assert_eq!(json, format!("\"{}\"", role.name()));
            let parsed = <Role as clap::ValueEnum>::from_str(role.name(), false).unwrap();
            assert_eq!(parsed, role);
            assert_eq!(role.default_user(), format!("seckill-{}", role.name()));
        }
        assert_eq!(Role::Buyer.default_user(), "seckill-buyer");
    }
}
