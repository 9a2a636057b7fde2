//! `lua/seat_buy.lua`: one purchase of seats in one section of a seat item
//! (docs/seats.md) — buy.lua's purchase with the seats chosen and written in
//! the same call. Its reply is buy.lua's and the seats
//! ([`super::buy::parse_seat_reply`]).

super::script_call! {
    /// One seat purchase in one section: KEYS then ARGV of `lua/seat_buy.lua`.
    SeatBuy = "seat_buy.lua", Sale;
    roles { buyer, operator }
    keys {
        meta, stock, buyers, buyer_orders, requests, orders, rate, reservations, deadlines,
        reservation_counts, seats, seat_orders,
    }
    argv { user, qty, request_id, order_id, campaign, item, payment_timeout_ms, node, mode, wanted }
}
