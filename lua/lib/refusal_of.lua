-- lib/refusal_of — what the buy scripts answer for a standing
-- (lib/standing, lib/granted): nil when admitted, else the outcome and its
-- detail (not_admitted: "<position> <serving> <eta ms>"; admission_expired:
-- "<from ms> <to ms>").
local function refusal_of(s)
  if s.state == 'admitted' then
    return nil, ''
  elseif s.state == 'waiting' or s.state == 'prequeue' then
    return 'not_admitted', string.format('%d %d %d', s.position, s.serving, s.eta)
  elseif s.state == 'expired' then
    return 'admission_expired', string.format('%d %d', s.from, s.to)
  end
  return s.state, ''
end
