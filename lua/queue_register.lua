#!lua
-- queue_register.lua — pre-registration (预约) for an item's waiting room
-- (docs/waiting-room.md): one account, one device, at most per_device
-- accounts per device and per_ip per IP prefix, before reg_until_ms (Redis
-- time). The caps hold under any concurrency: the count and the record move
-- in the same atomic step.
--
-- KEYS[1] room        hash   the room (lib/room_of): registration, reg_until_ms, caps
-- KEYS[2] registered  hash   user -> "<registered at ms> <ip prefix or -> <device>"
-- KEYS[3] devices     hash   device -> accounts registered on it
-- KEYS[4] ips         hash   IP prefix -> accounts registered from it
-- ARGV[1] user        user id
-- ARGV[2] device      device id (no spaces)
-- ARGV[3] ip_prefix   the caller's IP prefix (IPv4 /24, IPv6 /64), "" = none
--
-- Returns {outcome, registered_at_ms, device_accounts, ip_accounts, now_ms}:
--   registered           new, or a repeat from the same device and prefix (nothing
--                        written; registered_at_ms is the first registration's)
--   already_registered   the user registered before from another device or prefix:
--                        the first registration stands, nothing written
--   device_limit         the device has per_device accounts already
--   ip_limit             the prefix has per_ip accounts already
--   registration_closed  Redis time is at or past reg_until_ms
--   registration_off     the room has no registration (or there is no room)
-- With per_ip set, an empty ip_prefix is an error: the cap cannot be skipped
-- by leaving the address out. Nothing is written but on `registered` (new).

--- @include "lib/guarded"
--- @include "lib/strict_int"
--- @include "lib/shown"
--- @include "lib/now_ms"
--- @include "lib/room_of"
--- @include "lib/read"
--- @include "lib/int_of"
--- @include "lib/corrupt"

return guarded(function()
  local user, device, prefix = ARGV[1], ARGV[2], ARGV[3]
  if device == '' or string.find(device, '[%s%c]') then
    error({err = 'ERR queue_register: device id ' .. shown(device) .. ' is empty or has spaces'})
  end
  local now = now_ms()
  local r = room_of(KEYS[1])
  if not r or not r.registration then
    return {'registration_off', 0, 0, 0, now}
  end
  if r.per_ip > 0 and prefix == '' then
    error({err = 'ERR queue_register: this room caps accounts per IP: the IP prefix is required'})
  end
  local expire_at = r.expire_at
  local record = read(KEYS[2], 'HGET', KEYS[2], user)
  local on_device = read(KEYS[3], 'HGET', KEYS[3], device)
  on_device = on_device and int_of(KEYS[3], 'accounts of device ' .. shown(device), on_device) or 0
  local from_ip = 0
  if prefix ~= '' then
    from_ip = read(KEYS[4], 'HGET', KEYS[4], prefix)
    from_ip = from_ip and int_of(KEYS[4], 'accounts of ' .. shown(prefix), from_ip) or 0
  end
  if record then
    local at, ip, first_device = string.match(record, '^(%d+) (%S+) (.+)$')
    if not at or not strict_int(at) then
      corrupt(KEYS[2], 'registration of ' .. shown(user) .. ' holds ' .. shown(record))
    end
    local same = first_device == device and ip == (prefix ~= '' and prefix or '-')
    return {same and 'registered' or 'already_registered', tonumber(at), on_device, from_ip, now}
  end
  if r.reg_until and now >= r.reg_until then
    return {'registration_closed', 0, on_device, from_ip, now}
  end
  if r.per_device > 0 and on_device >= r.per_device then
    return {'device_limit', 0, on_device, from_ip, now}
  end
  if r.per_ip > 0 and from_ip >= r.per_ip then
    return {'ip_limit', 0, on_device, from_ip, now}
  end

  redis.call('HSET', KEYS[2], user, string.format('%d', now) .. ' '
    .. (prefix ~= '' and prefix or '-') .. ' ' .. device)
  on_device = redis.call('HINCRBY', KEYS[3], device, 1)
  if prefix ~= '' then
    from_ip = redis.call('HINCRBY', KEYS[4], prefix, 1)
  end
  if expire_at then
    for k = 2, 4 do
      redis.call('PEXPIREAT', KEYS[k], string.format('%d', expire_at))
    end
  end
  return {'registered', now, on_device, from_ip, now}
end)
