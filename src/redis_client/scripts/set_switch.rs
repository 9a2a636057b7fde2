//! `lua/set_switch.lua`: flip one item's kill switch and append the flip to
//! its capped history, in one step. Its call; `crate::domain::kill_switch` builds it.

super::script_call! {
    /// Flip the kill switch: KEYS and ARGV of `lua/set_switch.lua`.
    SetSwitch = "set_switch.lua", Sale;
    roles { operator }
    keys { meta, switch_log }
    argv { closed, reason, by, at_ms, expire_at_ms, keep }
}
