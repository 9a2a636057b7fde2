--- @include "lib/int_of"
--- @include "lib/optional_int_of"
--- @include "lib/expiry_of"
--- @include "lib/corrupt"
--- @include "lib/shown"

-- lib/terms_of — the numbers of the purchase terms preheat wrote into a
-- slot's meta, as the purchase reads them (the text of each field, false
-- when absent): from `validated` when the eight are exactly the text preheat
-- checked and joined by ' ' (one concatenation and one comparison instead of
-- eight integer checks), else checked one by one (a hand edit, a value
-- corrupted, a slot preheated by an older seckill), with the same messages.

-- starts_at, ends_at (nil: none), per-user limit, rate_max (0: no rate
-- limit) and expire_at (nil: never) of the terms in `key`.
local function terms_of(key, initial_stock, starts_at_ms, ends_at_ms, per_user_limit,
    rate_window_ms, rate_max, price_cents, expire_at_ms, validated)
  if validated and initial_stock and starts_at_ms and ends_at_ms and per_user_limit
      and rate_window_ms and rate_max and price_cents and expire_at_ms
      and validated == initial_stock .. ' ' .. starts_at_ms .. ' ' .. ends_at_ms .. ' '
        .. per_user_limit .. ' ' .. rate_window_ms .. ' ' .. rate_max .. ' ' .. price_cents
        .. ' ' .. expire_at_ms then
    return tonumber(starts_at_ms), tonumber(ends_at_ms), tonumber(per_user_limit),
      tonumber(rate_max), tonumber(expire_at_ms)
  end
  int_of(key, 'initial_stock', initial_stock)
  local starts_at = optional_int_of(key, 'starts_at_ms', starts_at_ms)
  local ends_at = optional_int_of(key, 'ends_at_ms', ends_at_ms)
  local limit = per_user_limit and int_of(key, 'per_user_limit', per_user_limit) or 1
  local rate_window = optional_int_of(key, 'rate_window_ms', rate_window_ms)
  local attempts_max = rate_max and int_of(key, 'rate_max', rate_max) or 0
  if price_cents then
    int_of(key, 'price_cents', price_cents)
  end
  local expire_at = expiry_of(key, 'expire_at_ms', expire_at_ms)
  if attempts_max > 0 and not (rate_window and rate_window >= 1) then
    corrupt(key, 'rate_window_ms holds ' .. shown(rate_window_ms) .. ', not a positive integer')
  end
  return starts_at, ends_at, limit, attempts_max, expire_at
end
