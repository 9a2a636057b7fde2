//! `lua/item_status.lua`: everything `seckill status` shows about one item,
//! read at one instant (read-only). Its call; the reply is parsed by
//! `crate::operator::monitor::status`, which owns the meaning of each field.

super::script_call! {
    /// Read one item's status: KEYS and ARGV of `lua/item_status.lua`.
    ReadItemStatus = "item_status.lua", Sale;
    // consume --metrics-listen reads every item's status as the consumer.
    roles { consumer, operator }
    keys { meta, stock, buyers, orders, dead, reservation_counts }
    argv { group }
}
