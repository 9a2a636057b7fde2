# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_seckill_global_optspecs
    string join \n c/campaign= format= q/quiet v/verbose tz= redis= cluster redis-password-file= tls-ca-cert= connect-timeout= response-timeout= h/help V/version
end

function __fish_seckill_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_seckill_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_seckill_using_subcommand
    set -l cmd (__fish_seckill_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c seckill -n "__fish_seckill_needs_command" -s c -l campaign -d 'Campaign file (YAML) to work on' -r -F
complete -c seckill -n "__fish_seckill_needs_command" -l format -d 'Output format: a table for people, JSON for scripts; csv (loadtest only), prometheus (status only) for monitoring' -r -f -a "table\t'Human-readable table'
json\t'One JSON document on stdout, for scripts'
csv\t'Comma-separated values (loadtest: redis-benchmark\'s columns first)'
prometheus\t'Prometheus text exposition format (`status` only: node_exporter\'s textfile collector)'"
complete -c seckill -n "__fish_seckill_needs_command" -l tz -d 'Where the times in tables are: `file` (the offset the campaign file writes starts_at in, e.g. +08:00; UTC for a file without times), `utc`, or an offset like +08:00. JSON is always UTC' -r
complete -c seckill -n "__fish_seckill_needs_command" -l redis -d 'Redis URL: redis://[user:pass@]host:port/db, rediss:// for TLS. Overrides the campaign file\'s `redis:`. [default: redis://127.0.0.1:6379/0]' -r
complete -c seckill -n "__fish_seckill_needs_command" -l redis-password-file -d 'A file holding the password for every Redis URL that has none (the URL\'s user, or the default user): no password in `ps`. A final newline is not part of it. [default: $REDISCLI_AUTH, as redis-cli reads it]' -r -F
complete -c seckill -n "__fish_seckill_needs_command" -l tls-ca-cert -d 'PEM file of the CA that signed the server\'s certificate (rediss:// only; default: the system trust store)' -r -F
complete -c seckill -n "__fish_seckill_needs_command" -l connect-timeout -d 'Give up connecting to Redis after this long (e.g. 500ms, 2s)' -r
complete -c seckill -n "__fish_seckill_needs_command" -l response-timeout -d 'Give up waiting for one Redis reply after this long' -r
complete -c seckill -n "__fish_seckill_needs_command" -s q -l quiet -d 'Print nothing for people on success (for cron): no table, no warning, no log or retry line; errors, drift and refused outcomes still print, and so does the output of --format json, csv or prometheus. The exit code is the same either way'
complete -c seckill -n "__fish_seckill_needs_command" -s v -l verbose -d 'Say on stderr where each setting came from, then each Redis command sent (script name, first key, slot, node) with its latency: what the command does, without a packet capture. Never values or passwords'
complete -c seckill -n "__fish_seckill_needs_command" -l cluster -d 'Treat the URL (comma-separated URLs allowed) as seed nodes of a Redis Cluster'
complete -c seckill -n "__fish_seckill_needs_command" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c seckill -n "__fish_seckill_needs_command" -s V -l version -d 'Print version'
complete -c seckill -n "__fish_seckill_needs_command" -f -a "init" -d 'Reset a campaign\'s Redis state to the file\'s values (rehearsals, load tests)'
complete -c seckill -n "__fish_seckill_needs_command" -f -a "preheat" -d 'Load stock, item data and the sale window into Redis before launch; never clobbers a live sale'
complete -c seckill -n "__fish_seckill_needs_command" -f -a "buy" -d 'One purchase attempt through the buy script; the exit code tells the outcome'
complete -c seckill -n "__fish_seckill_needs_command" -f -a "shutdown-switch" -d 'The kill switch: `on` refuses every buy from the next call, `off` reopens, `status` shows'
complete -c seckill -n "__fish_seckill_needs_command" -f -a "completions" -d 'Print a shell completion script (bash, zsh, fish, ...)'
complete -c seckill -n "__fish_seckill_needs_command" -f -a "man" -d 'Print the manual page (roff), or write every page with --out DIR'
complete -c seckill -n "__fish_seckill_needs_command" -f -a "consume" -d 'Carry orders from the item streams into the order database: commit, then ack'
complete -c seckill -n "__fish_seckill_needs_command" -f -a "pending-claim" -d 'Recover idle pending orders (store them, or dead-letter the ones that cannot be stored)'
complete -c seckill -n "__fish_seckill_needs_command" -f -a "dead-letter" -d 'List dead-lettered entries with their reasons, or re-drive them into the order database'
complete -c seckill -n "__fish_seckill_needs_command" -f -a "reconcile" -d 'Prove initial stock = database + in flight + dead-lettered + left; exit 0 balanced, 3 drift, 1 not checked'
complete -c seckill -n "__fish_seckill_needs_command" -f -a "pay" -d 'Pay one reserved order (campaigns with payment_timeout); exit 0 paid, 30 already paid, 31 expired, 32 cancelled, 33 unknown'
complete -c seckill -n "__fish_seckill_needs_command" -f -a "cancel" -d 'Cancel one reserved order: its units go back on sale; a paid order is never released'
complete -c seckill -n "__fish_seckill_needs_command" -f -a "expire" -d 'Release every reservation past its payment deadline (Redis clock), once or in a loop'
complete -c seckill -n "__fish_seckill_needs_command" -f -a "status" -d 'Live view of a sale per item: stock, rate, window, kill switch, consumer lag, key expiry (read only)'
complete -c seckill -n "__fish_seckill_needs_command" -f -a "doctor" -d 'Go / no-go before launch: eviction, persistence, replicas, cluster, clocks, window, database, permissions'
complete -c seckill -n "__fish_seckill_needs_command" -f -a "campaigns" -d 'The campaigns live on a Redis (recorded by preheat), to see which sale a command would touch'
complete -c seckill -n "__fish_seckill_needs_command" -f -a "serve" -d 'The shop\'s front door: an HTTP buy API through the same scripts (docs/serve.md); runs until SIGTERM'
complete -c seckill -n "__fish_seckill_needs_command" -f -a "queue" -d 'The waiting room in front of the buy script: join, position, status, pause/resume, admit, shuffle, penalize'
complete -c seckill -n "__fish_seckill_needs_command" -f -a "register" -d 'Pre-register a user on a device for the waiting rooms that take registered users only (预约)'
complete -c seckill -n "__fish_seckill_needs_command" -f -a "rebalance" -d 'Move stock of bucketed items from full buckets to draining ones (optional; see docs/buckets.md)'
complete -c seckill -n "__fish_seckill_needs_command" -f -a "acl" -d 'The ACL SETUSER line of a buyer, consumer or operator user for this campaign; --apply writes and proves it'
complete -c seckill -n "__fish_seckill_needs_command" -f -a "loadtest" -d 'Load-test stock-decrement designs (V1–V4, full buy script, lock) in a private namespace; never touches a sale'
complete -c seckill -n "__fish_seckill_needs_command" -f -a "scripts" -d 'Print a Lua script as Redis runs it (its lua/lib/ helpers pasted in), or list them with their KEYS and ARGV'
complete -c seckill -n "__fish_seckill_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c seckill -n "__fish_seckill_using_subcommand init" -l purge-orders -d 'Also delete the campaign\'s rows from the order database. The value must be the campaign id: a confirmation of its own' -r
complete -c seckill -n "__fish_seckill_using_subcommand init" -l orders-db -d 'Order database URL: sqlite://PATH (relative to the current directory) or mysql://user:pass@host:3306/db. Overrides the campaign file\'s `orders.store`. [default: sqlite://orders.db next to the campaign file]' -r
complete -c seckill -n "__fish_seckill_using_subcommand init" -s c -l campaign -d 'Campaign file (YAML) to work on' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand init" -l format -d 'Output format: a table for people, JSON for scripts; csv (loadtest only), prometheus (status only) for monitoring' -r -f -a "table\t'Human-readable table'
json\t'One JSON document on stdout, for scripts'
csv\t'Comma-separated values (loadtest: redis-benchmark\'s columns first)'
prometheus\t'Prometheus text exposition format (`status` only: node_exporter\'s textfile collector)'"
complete -c seckill -n "__fish_seckill_using_subcommand init" -l tz -d 'Where the times in tables are: `file` (the offset the campaign file writes starts_at in, e.g. +08:00; UTC for a file without times), `utc`, or an offset like +08:00. JSON is always UTC' -r
complete -c seckill -n "__fish_seckill_using_subcommand init" -l redis -d 'Redis URL: redis://[user:pass@]host:port/db, rediss:// for TLS. Overrides the campaign file\'s `redis:`. [default: redis://127.0.0.1:6379/0]' -r
complete -c seckill -n "__fish_seckill_using_subcommand init" -l redis-password-file -d 'A file holding the password for every Redis URL that has none (the URL\'s user, or the default user): no password in `ps`. A final newline is not part of it. [default: $REDISCLI_AUTH, as redis-cli reads it]' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand init" -l tls-ca-cert -d 'PEM file of the CA that signed the server\'s certificate (rediss:// only; default: the system trust store)' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand init" -l connect-timeout -d 'Give up connecting to Redis after this long (e.g. 500ms, 2s)' -r
complete -c seckill -n "__fish_seckill_using_subcommand init" -l response-timeout -d 'Give up waiting for one Redis reply after this long' -r
complete -c seckill -n "__fish_seckill_using_subcommand init" -l yes -d 'Reset even when the campaign already has sales (their Redis record is deleted) or a kill switch is ON (it is turned off)'
complete -c seckill -n "__fish_seckill_using_subcommand init" -l allow-shared-items -d 'Reset even though another campaign live on this Redis holds the same item ids (without it that is refused, as `preheat` refuses it: usually a typo\'d campaign id that would start a second copy of the same sale)'
complete -c seckill -n "__fish_seckill_using_subcommand init" -s q -l quiet -d 'Print nothing for people on success (for cron): no table, no warning, no log or retry line; errors, drift and refused outcomes still print, and so does the output of --format json, csv or prometheus. The exit code is the same either way'
complete -c seckill -n "__fish_seckill_using_subcommand init" -s v -l verbose -d 'Say on stderr where each setting came from, then each Redis command sent (script name, first key, slot, node) with its latency: what the command does, without a packet capture. Never values or passwords'
complete -c seckill -n "__fish_seckill_using_subcommand init" -l cluster -d 'Treat the URL (comma-separated URLs allowed) as seed nodes of a Redis Cluster'
complete -c seckill -n "__fish_seckill_using_subcommand init" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c seckill -n "__fish_seckill_using_subcommand init" -s V -l version -d 'Print version'
complete -c seckill -n "__fish_seckill_using_subcommand preheat" -l item -d 'Preheat only this item (default: every item of the campaign)' -r
complete -c seckill -n "__fish_seckill_using_subcommand preheat" -l orders-db -d 'Order database URL: sqlite://PATH (relative to the current directory) or mysql://user:pass@host:3306/db. Overrides the campaign file\'s `orders.store`. [default: sqlite://orders.db next to the campaign file]' -r
complete -c seckill -n "__fish_seckill_using_subcommand preheat" -s c -l campaign -d 'Campaign file (YAML) to work on' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand preheat" -l format -d 'Output format: a table for people, JSON for scripts; csv (loadtest only), prometheus (status only) for monitoring' -r -f -a "table\t'Human-readable table'
json\t'One JSON document on stdout, for scripts'
csv\t'Comma-separated values (loadtest: redis-benchmark\'s columns first)'
prometheus\t'Prometheus text exposition format (`status` only: node_exporter\'s textfile collector)'"
complete -c seckill -n "__fish_seckill_using_subcommand preheat" -l tz -d 'Where the times in tables are: `file` (the offset the campaign file writes starts_at in, e.g. +08:00; UTC for a file without times), `utc`, or an offset like +08:00. JSON is always UTC' -r
complete -c seckill -n "__fish_seckill_using_subcommand preheat" -l redis -d 'Redis URL: redis://[user:pass@]host:port/db, rediss:// for TLS. Overrides the campaign file\'s `redis:`. [default: redis://127.0.0.1:6379/0]' -r
complete -c seckill -n "__fish_seckill_using_subcommand preheat" -l redis-password-file -d 'A file holding the password for every Redis URL that has none (the URL\'s user, or the default user): no password in `ps`. A final newline is not part of it. [default: $REDISCLI_AUTH, as redis-cli reads it]' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand preheat" -l tls-ca-cert -d 'PEM file of the CA that signed the server\'s certificate (rediss:// only; default: the system trust store)' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand preheat" -l connect-timeout -d 'Give up connecting to Redis after this long (e.g. 500ms, 2s)' -r
complete -c seckill -n "__fish_seckill_using_subcommand preheat" -l response-timeout -d 'Give up waiting for one Redis reply after this long' -r
complete -c seckill -n "__fish_seckill_using_subcommand preheat" -l force -d 'Overwrite stock already in Redis (refused for items that already sold something: use `init --yes`)'
complete -c seckill -n "__fish_seckill_using_subcommand preheat" -l update-meta -d 'Keep the stock in Redis but take name, price, sale window, limits and key expiry from the file (e.g. to extend `ends_at` during a sale)'
complete -c seckill -n "__fish_seckill_using_subcommand preheat" -l dry-run -d 'Show what would happen, write nothing'
complete -c seckill -n "__fish_seckill_using_subcommand preheat" -l recover -d 'After Redis lost data: for an item whose orders are already in the order database, load initial stock minus the units stored and restore its buyers (without it such an item is refused: loading the full stock would sell those units twice)'
complete -c seckill -n "__fish_seckill_using_subcommand preheat" -l require-durable -d 'Refuse when a master persists nothing (no AOF, no snapshots) or will not say (its AOF is read from INFO persistence, which the operator role may send; on a cluster, each master)'
complete -c seckill -n "__fish_seckill_using_subcommand preheat" -l allow-shared-items -d 'Preheat even though another campaign live on this Redis holds the same item ids (without it that is refused: usually a typo\'d campaign id that would start a second copy of the same sale)'
complete -c seckill -n "__fish_seckill_using_subcommand preheat" -s q -l quiet -d 'Print nothing for people on success (for cron): no table, no warning, no log or retry line; errors, drift and refused outcomes still print, and so does the output of --format json, csv or prometheus. The exit code is the same either way'
complete -c seckill -n "__fish_seckill_using_subcommand preheat" -s v -l verbose -d 'Say on stderr where each setting came from, then each Redis command sent (script name, first key, slot, node) with its latency: what the command does, without a packet capture. Never values or passwords'
complete -c seckill -n "__fish_seckill_using_subcommand preheat" -l cluster -d 'Treat the URL (comma-separated URLs allowed) as seed nodes of a Redis Cluster'
complete -c seckill -n "__fish_seckill_using_subcommand preheat" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c seckill -n "__fish_seckill_using_subcommand preheat" -s V -l version -d 'Print version'
complete -c seckill -n "__fish_seckill_using_subcommand buy" -l item -d 'Item to buy (an `id` from the campaign\'s `items`)' -r
complete -c seckill -n "__fish_seckill_using_subcommand buy" -l user -d 'Shopper\'s user id (1..128 bytes of UTF-8, no control characters)' -r
complete -c seckill -n "__fish_seckill_using_subcommand buy" -l qty -d 'Units to buy in this attempt (at most the campaign\'s per_user_limit)' -r
complete -c seckill -n "__fish_seckill_using_subcommand buy" -l wait-replicas -d 'After an `ok`, WAIT until this many replicas confirmed it; fewer within --wait-timeout is the outcome `unreplicated` (exit 20): bought, but a failover now could lose it. On a cluster WAIT goes to the item\'s master (and, for a bucketed item, every master the attempt wrote to)' -r
complete -c seckill -n "__fish_seckill_using_subcommand buy" -l wait-timeout -d 'Longest WAIT for --wait-replicas (the buy\'s reply waits this long at most; must be shorter than --response-timeout)' -r
complete -c seckill -n "__fish_seckill_using_subcommand buy" -l request-id -d 'Idempotency key: a retry with the same id returns the first `ok` and buys nothing more. Default: a fresh ULID, printed so you can retry with it' -r
complete -c seckill -n "__fish_seckill_using_subcommand buy" -s c -l campaign -d 'Campaign file (YAML) to work on' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand buy" -l format -d 'Output format: a table for people, JSON for scripts; csv (loadtest only), prometheus (status only) for monitoring' -r -f -a "table\t'Human-readable table'
json\t'One JSON document on stdout, for scripts'
csv\t'Comma-separated values (loadtest: redis-benchmark\'s columns first)'
prometheus\t'Prometheus text exposition format (`status` only: node_exporter\'s textfile collector)'"
complete -c seckill -n "__fish_seckill_using_subcommand buy" -l tz -d 'Where the times in tables are: `file` (the offset the campaign file writes starts_at in, e.g. +08:00; UTC for a file without times), `utc`, or an offset like +08:00. JSON is always UTC' -r
complete -c seckill -n "__fish_seckill_using_subcommand buy" -l redis -d 'Redis URL: redis://[user:pass@]host:port/db, rediss:// for TLS. Overrides the campaign file\'s `redis:`. [default: redis://127.0.0.1:6379/0]' -r
complete -c seckill -n "__fish_seckill_using_subcommand buy" -l redis-password-file -d 'A file holding the password for every Redis URL that has none (the URL\'s user, or the default user): no password in `ps`. A final newline is not part of it. [default: $REDISCLI_AUTH, as redis-cli reads it]' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand buy" -l tls-ca-cert -d 'PEM file of the CA that signed the server\'s certificate (rediss:// only; default: the system trust store)' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand buy" -l connect-timeout -d 'Give up connecting to Redis after this long (e.g. 500ms, 2s)' -r
complete -c seckill -n "__fish_seckill_using_subcommand buy" -l response-timeout -d 'Give up waiting for one Redis reply after this long' -r
complete -c seckill -n "__fish_seckill_using_subcommand buy" -s q -l quiet -d 'Print nothing for people on success (for cron): no table, no warning, no log or retry line; errors, drift and refused outcomes still print, and so does the output of --format json, csv or prometheus. The exit code is the same either way'
complete -c seckill -n "__fish_seckill_using_subcommand buy" -s v -l verbose -d 'Say on stderr where each setting came from, then each Redis command sent (script name, first key, slot, node) with its latency: what the command does, without a packet capture. Never values or passwords'
complete -c seckill -n "__fish_seckill_using_subcommand buy" -l cluster -d 'Treat the URL (comma-separated URLs allowed) as seed nodes of a Redis Cluster'
complete -c seckill -n "__fish_seckill_using_subcommand buy" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c seckill -n "__fish_seckill_using_subcommand buy" -s V -l version -d 'Print version'
complete -c seckill -n "__fish_seckill_using_subcommand shutdown-switch" -l item -d 'Only this item (default: every item of the campaign)' -r
complete -c seckill -n "__fish_seckill_using_subcommand shutdown-switch" -l reason -d 'Why (kept with the switch, shown by status)' -r
complete -c seckill -n "__fish_seckill_using_subcommand shutdown-switch" -l by -d 'Who flips the switch, kept with it [default: the OS account, as user@host]' -r
complete -c seckill -n "__fish_seckill_using_subcommand shutdown-switch" -s c -l campaign -d 'Campaign file (YAML) to work on' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand shutdown-switch" -l format -d 'Output format: a table for people, JSON for scripts; csv (loadtest only), prometheus (status only) for monitoring' -r -f -a "table\t'Human-readable table'
json\t'One JSON document on stdout, for scripts'
csv\t'Comma-separated values (loadtest: redis-benchmark\'s columns first)'
prometheus\t'Prometheus text exposition format (`status` only: node_exporter\'s textfile collector)'"
complete -c seckill -n "__fish_seckill_using_subcommand shutdown-switch" -l tz -d 'Where the times in tables are: `file` (the offset the campaign file writes starts_at in, e.g. +08:00; UTC for a file without times), `utc`, or an offset like +08:00. JSON is always UTC' -r
complete -c seckill -n "__fish_seckill_using_subcommand shutdown-switch" -l redis -d 'Redis URL: redis://[user:pass@]host:port/db, rediss:// for TLS. Overrides the campaign file\'s `redis:`. [default: redis://127.0.0.1:6379/0]' -r
complete -c seckill -n "__fish_seckill_using_subcommand shutdown-switch" -l redis-password-file -d 'A file holding the password for every Redis URL that has none (the URL\'s user, or the default user): no password in `ps`. A final newline is not part of it. [default: $REDISCLI_AUTH, as redis-cli reads it]' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand shutdown-switch" -l tls-ca-cert -d 'PEM file of the CA that signed the server\'s certificate (rediss:// only; default: the system trust store)' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand shutdown-switch" -l connect-timeout -d 'Give up connecting to Redis after this long (e.g. 500ms, 2s)' -r
complete -c seckill -n "__fish_seckill_using_subcommand shutdown-switch" -l response-timeout -d 'Give up waiting for one Redis reply after this long' -r
complete -c seckill -n "__fish_seckill_using_subcommand shutdown-switch" -l buckets -d 'Also show each bucket of a bucketed item (switch, slot, stock, pending transfers)'
complete -c seckill -n "__fish_seckill_using_subcommand shutdown-switch" -l history -d 'With `status`: also list the last flips of each item (newest first)'
complete -c seckill -n "__fish_seckill_using_subcommand shutdown-switch" -l dry-run -d 'With `on` or `off`: show what would change, write nothing'
complete -c seckill -n "__fish_seckill_using_subcommand shutdown-switch" -s q -l quiet -d 'Print nothing for people on success (for cron): no table, no warning, no log or retry line; errors, drift and refused outcomes still print, and so does the output of --format json, csv or prometheus. The exit code is the same either way'
complete -c seckill -n "__fish_seckill_using_subcommand shutdown-switch" -s v -l verbose -d 'Say on stderr where each setting came from, then each Redis command sent (script name, first key, slot, node) with its latency: what the command does, without a packet capture. Never values or passwords'
complete -c seckill -n "__fish_seckill_using_subcommand shutdown-switch" -l cluster -d 'Treat the URL (comma-separated URLs allowed) as seed nodes of a Redis Cluster'
complete -c seckill -n "__fish_seckill_using_subcommand shutdown-switch" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c seckill -n "__fish_seckill_using_subcommand shutdown-switch" -s V -l version -d 'Print version'
complete -c seckill -n "__fish_seckill_using_subcommand completions" -s c -l campaign -d 'Campaign file (YAML) to work on' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand completions" -l format -d 'Output format: a table for people, JSON for scripts; csv (loadtest only), prometheus (status only) for monitoring' -r -f -a "table\t'Human-readable table'
json\t'One JSON document on stdout, for scripts'
csv\t'Comma-separated values (loadtest: redis-benchmark\'s columns first)'
prometheus\t'Prometheus text exposition format (`status` only: node_exporter\'s textfile collector)'"
complete -c seckill -n "__fish_seckill_using_subcommand completions" -l tz -d 'Where the times in tables are: `file` (the offset the campaign file writes starts_at in, e.g. +08:00; UTC for a file without times), `utc`, or an offset like +08:00. JSON is always UTC' -r
complete -c seckill -n "__fish_seckill_using_subcommand completions" -l redis -d 'Redis URL: redis://[user:pass@]host:port/db, rediss:// for TLS. Overrides the campaign file\'s `redis:`. [default: redis://127.0.0.1:6379/0]' -r
complete -c seckill -n "__fish_seckill_using_subcommand completions" -l redis-password-file -d 'A file holding the password for every Redis URL that has none (the URL\'s user, or the default user): no password in `ps`. A final newline is not part of it. [default: $REDISCLI_AUTH, as redis-cli reads it]' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand completions" -l tls-ca-cert -d 'PEM file of the CA that signed the server\'s certificate (rediss:// only; default: the system trust store)' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand completions" -l connect-timeout -d 'Give up connecting to Redis after this long (e.g. 500ms, 2s)' -r
complete -c seckill -n "__fish_seckill_using_subcommand completions" -l response-timeout -d 'Give up waiting for one Redis reply after this long' -r
complete -c seckill -n "__fish_seckill_using_subcommand completions" -s q -l quiet -d 'Print nothing for people on success (for cron): no table, no warning, no log or retry line; errors, drift and refused outcomes still print, and so does the output of --format json, csv or prometheus. The exit code is the same either way'
complete -c seckill -n "__fish_seckill_using_subcommand completions" -s v -l verbose -d 'Say on stderr where each setting came from, then each Redis command sent (script name, first key, slot, node) with its latency: what the command does, without a packet capture. Never values or passwords'
complete -c seckill -n "__fish_seckill_using_subcommand completions" -l cluster -d 'Treat the URL (comma-separated URLs allowed) as seed nodes of a Redis Cluster'
complete -c seckill -n "__fish_seckill_using_subcommand completions" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c seckill -n "__fish_seckill_using_subcommand completions" -s V -l version -d 'Print version'
complete -c seckill -n "__fish_seckill_using_subcommand man" -l out -d 'Write seckill.1 and one seckill-SUBCOMMAND.1 per subcommand into DIR (created if missing) instead of printing seckill.1' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand man" -s c -l campaign -d 'Campaign file (YAML) to work on' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand man" -l format -d 'Output format: a table for people, JSON for scripts; csv (loadtest only), prometheus (status only) for monitoring' -r -f -a "table\t'Human-readable table'
json\t'One JSON document on stdout, for scripts'
csv\t'Comma-separated values (loadtest: redis-benchmark\'s columns first)'
prometheus\t'Prometheus text exposition format (`status` only: node_exporter\'s textfile collector)'"
complete -c seckill -n "__fish_seckill_using_subcommand man" -l tz -d 'Where the times in tables are: `file` (the offset the campaign file writes starts_at in, e.g. +08:00; UTC for a file without times), `utc`, or an offset like +08:00. JSON is always UTC' -r
complete -c seckill -n "__fish_seckill_using_subcommand man" -l redis -d 'Redis URL: redis://[user:pass@]host:port/db, rediss:// for TLS. Overrides the campaign file\'s `redis:`. [default: redis://127.0.0.1:6379/0]' -r
complete -c seckill -n "__fish_seckill_using_subcommand man" -l redis-password-file -d 'A file holding the password for every Redis URL that has none (the URL\'s user, or the default user): no password in `ps`. A final newline is not part of it. [default: $REDISCLI_AUTH, as redis-cli reads it]' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand man" -l tls-ca-cert -d 'PEM file of the CA that signed the server\'s certificate (rediss:// only; default: the system trust store)' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand man" -l connect-timeout -d 'Give up connecting to Redis after this long (e.g. 500ms, 2s)' -r
complete -c seckill -n "__fish_seckill_using_subcommand man" -l response-timeout -d 'Give up waiting for one Redis reply after this long' -r
complete -c seckill -n "__fish_seckill_using_subcommand man" -s q -l quiet -d 'Print nothing for people on success (for cron): no table, no warning, no log or retry line; errors, drift and refused outcomes still print, and so does the output of --format json, csv or prometheus. The exit code is the same either way'
complete -c seckill -n "__fish_seckill_using_subcommand man" -s v -l verbose -d 'Say on stderr where each setting came from, then each Redis command sent (script name, first key, slot, node) with its latency: what the command does, without a packet capture. Never values or passwords'
complete -c seckill -n "__fish_seckill_using_subcommand man" -l cluster -d 'Treat the URL (comma-separated URLs allowed) as seed nodes of a Redis Cluster'
complete -c seckill -n "__fish_seckill_using_subcommand man" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c seckill -n "__fish_seckill_using_subcommand man" -s V -l version -d 'Print version'
complete -c seckill -n "__fish_seckill_using_subcommand consume" -l consumer -d 'Consumer name in the group (default: the host name, the same across restarts). A consumer started under its old name stores its own pending entries first; give each process on one host its own name' -r
complete -c seckill -n "__fish_seckill_using_subcommand consume" -l batch -d 'Entries read per stream per round; a round is stored in one transaction (with the rounds read meanwhile, up to 4)' -r
complete -c seckill -n "__fish_seckill_using_subcommand consume" -l metrics-listen -d 'Serve http://ADDR/metrics (Prometheus) and /healthz (200 while Redis and the database answer) while consuming: :PORT for every interface, or HOST:PORT' -r
complete -c seckill -n "__fish_seckill_using_subcommand consume" -l orders-db -d 'Order database URL: sqlite://PATH (relative to the current directory) or mysql://user:pass@host:3306/db. Overrides the campaign file\'s `orders.store`. [default: sqlite://orders.db next to the campaign file]' -r
complete -c seckill -n "__fish_seckill_using_subcommand consume" -s c -l campaign -d 'Campaign file (YAML) to work on' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand consume" -l format -d 'Output format: a table for people, JSON for scripts; csv (loadtest only), prometheus (status only) for monitoring' -r -f -a "table\t'Human-readable table'
json\t'One JSON document on stdout, for scripts'
csv\t'Comma-separated values (loadtest: redis-benchmark\'s columns first)'
prometheus\t'Prometheus text exposition format (`status` only: node_exporter\'s textfile collector)'"
complete -c seckill -n "__fish_seckill_using_subcommand consume" -l tz -d 'Where the times in tables are: `file` (the offset the campaign file writes starts_at in, e.g. +08:00; UTC for a file without times), `utc`, or an offset like +08:00. JSON is always UTC' -r
complete -c seckill -n "__fish_seckill_using_subcommand consume" -l redis -d 'Redis URL: redis://[user:pass@]host:port/db, rediss:// for TLS. Overrides the campaign file\'s `redis:`. [default: redis://127.0.0.1:6379/0]' -r
complete -c seckill -n "__fish_seckill_using_subcommand consume" -l redis-password-file -d 'A file holding the password for every Redis URL that has none (the URL\'s user, or the default user): no password in `ps`. A final newline is not part of it. [default: $REDISCLI_AUTH, as redis-cli reads it]' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand consume" -l tls-ca-cert -d 'PEM file of the CA that signed the server\'s certificate (rediss:// only; default: the system trust store)' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand consume" -l connect-timeout -d 'Give up connecting to Redis after this long (e.g. 500ms, 2s)' -r
complete -c seckill -n "__fish_seckill_using_subcommand consume" -l response-timeout -d 'Give up waiting for one Redis reply after this long' -r
complete -c seckill -n "__fish_seckill_using_subcommand consume" -l drain -d 'Exit 0 once every stream is consumed (nothing new to read) instead of running until SIGINT/SIGTERM'
complete -c seckill -n "__fish_seckill_using_subcommand consume" -s q -l quiet -d 'Print nothing for people on success (for cron): no table, no warning, no log or retry line; errors, drift and refused outcomes still print, and so does the output of --format json, csv or prometheus. The exit code is the same either way'
complete -c seckill -n "__fish_seckill_using_subcommand consume" -s v -l verbose -d 'Say on stderr where each setting came from, then each Redis command sent (script name, first key, slot, node) with its latency: what the command does, without a packet capture. Never values or passwords'
complete -c seckill -n "__fish_seckill_using_subcommand consume" -l cluster -d 'Treat the URL (comma-separated URLs allowed) as seed nodes of a Redis Cluster'
complete -c seckill -n "__fish_seckill_using_subcommand consume" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c seckill -n "__fish_seckill_using_subcommand consume" -s V -l version -d 'Print version'
complete -c seckill -n "__fish_seckill_using_subcommand pending-claim" -l min-idle -d 'Claim entries pending at least this long (e.g. 30s, 5m; 0s claims everything pending)' -r
complete -c seckill -n "__fish_seckill_using_subcommand pending-claim" -l max-deliveries -d 'Dead-letter a valid order delivered this many times if the database still refuses it (entries that are not orders are dead-lettered at once)' -r
complete -c seckill -n "__fish_seckill_using_subcommand pending-claim" -l batch -d 'Entries claimed per XAUTOCLAIM call and stored per transaction' -r
complete -c seckill -n "__fish_seckill_using_subcommand pending-claim" -l delete-consumers -d 'Afterwards, delete the group\'s consumers idle at least this long that hold nothing pending (e.g. 1h: names of consumers that are gone); one with pending entries is never deleted' -r
complete -c seckill -n "__fish_seckill_using_subcommand pending-claim" -l consumer -d 'Consumer name the entries are claimed to (default: pending-claim-HOST, the same every run)' -r
complete -c seckill -n "__fish_seckill_using_subcommand pending-claim" -l orders-db -d 'Order database URL: sqlite://PATH (relative to the current directory) or mysql://user:pass@host:3306/db. Overrides the campaign file\'s `orders.store`. [default: sqlite://orders.db next to the campaign file]' -r
complete -c seckill -n "__fish_seckill_using_subcommand pending-claim" -s c -l campaign -d 'Campaign file (YAML) to work on' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand pending-claim" -l format -d 'Output format: a table for people, JSON for scripts; csv (loadtest only), prometheus (status only) for monitoring' -r -f -a "table\t'Human-readable table'
json\t'One JSON document on stdout, for scripts'
csv\t'Comma-separated values (loadtest: redis-benchmark\'s columns first)'
prometheus\t'Prometheus text exposition format (`status` only: node_exporter\'s textfile collector)'"
complete -c seckill -n "__fish_seckill_using_subcommand pending-claim" -l tz -d 'Where the times in tables are: `file` (the offset the campaign file writes starts_at in, e.g. +08:00; UTC for a file without times), `utc`, or an offset like +08:00. JSON is always UTC' -r
complete -c seckill -n "__fish_seckill_using_subcommand pending-claim" -l redis -d 'Redis URL: redis://[user:pass@]host:port/db, rediss:// for TLS. Overrides the campaign file\'s `redis:`. [default: redis://127.0.0.1:6379/0]' -r
complete -c seckill -n "__fish_seckill_using_subcommand pending-claim" -l redis-password-file -d 'A file holding the password for every Redis URL that has none (the URL\'s user, or the default user): no password in `ps`. A final newline is not part of it. [default: $REDISCLI_AUTH, as redis-cli reads it]' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand pending-claim" -l tls-ca-cert -d 'PEM file of the CA that signed the server\'s certificate (rediss:// only; default: the system trust store)' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand pending-claim" -l connect-timeout -d 'Give up connecting to Redis after this long (e.g. 500ms, 2s)' -r
complete -c seckill -n "__fish_seckill_using_subcommand pending-claim" -l response-timeout -d 'Give up waiting for one Redis reply after this long' -r
complete -c seckill -n "__fish_seckill_using_subcommand pending-claim" -s q -l quiet -d 'Print nothing for people on success (for cron): no table, no warning, no log or retry line; errors, drift and refused outcomes still print, and so does the output of --format json, csv or prometheus. The exit code is the same either way'
complete -c seckill -n "__fish_seckill_using_subcommand pending-claim" -s v -l verbose -d 'Say on stderr where each setting came from, then each Redis command sent (script name, first key, slot, node) with its latency: what the command does, without a packet capture. Never values or passwords'
complete -c seckill -n "__fish_seckill_using_subcommand pending-claim" -l cluster -d 'Treat the URL (comma-separated URLs allowed) as seed nodes of a Redis Cluster'
complete -c seckill -n "__fish_seckill_using_subcommand pending-claim" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c seckill -n "__fish_seckill_using_subcommand pending-claim" -s V -l version -d 'Print version'
complete -c seckill -n "__fish_seckill_using_subcommand dead-letter" -l item -d 'Only this item (default: every item)' -r
complete -c seckill -n "__fish_seckill_using_subcommand dead-letter" -l id -d 'Only these dead letters: a dead-letter stream id, an original stream id or an order id (repeatable; default: all)' -r
complete -c seckill -n "__fish_seckill_using_subcommand dead-letter" -l orders-db -d 'Order database URL: sqlite://PATH (relative to the current directory) or mysql://user:pass@host:3306/db. Overrides the campaign file\'s `orders.store`. [default: sqlite://orders.db next to the campaign file]' -r
complete -c seckill -n "__fish_seckill_using_subcommand dead-letter" -s c -l campaign -d 'Campaign file (YAML) to work on' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand dead-letter" -l format -d 'Output format: a table for people, JSON for scripts; csv (loadtest only), prometheus (status only) for monitoring' -r -f -a "table\t'Human-readable table'
json\t'One JSON document on stdout, for scripts'
csv\t'Comma-separated values (loadtest: redis-benchmark\'s columns first)'
prometheus\t'Prometheus text exposition format (`status` only: node_exporter\'s textfile collector)'"
complete -c seckill -n "__fish_seckill_using_subcommand dead-letter" -l tz -d 'Where the times in tables are: `file` (the offset the campaign file writes starts_at in, e.g. +08:00; UTC for a file without times), `utc`, or an offset like +08:00. JSON is always UTC' -r
complete -c seckill -n "__fish_seckill_using_subcommand dead-letter" -l redis -d 'Redis URL: redis://[user:pass@]host:port/db, rediss:// for TLS. Overrides the campaign file\'s `redis:`. [default: redis://127.0.0.1:6379/0]' -r
complete -c seckill -n "__fish_seckill_using_subcommand dead-letter" -l redis-password-file -d 'A file holding the password for every Redis URL that has none (the URL\'s user, or the default user): no password in `ps`. A final newline is not part of it. [default: $REDISCLI_AUTH, as redis-cli reads it]' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand dead-letter" -l tls-ca-cert -d 'PEM file of the CA that signed the server\'s certificate (rediss:// only; default: the system trust store)' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand dead-letter" -l connect-timeout -d 'Give up connecting to Redis after this long (e.g. 500ms, 2s)' -r
complete -c seckill -n "__fish_seckill_using_subcommand dead-letter" -l response-timeout -d 'Give up waiting for one Redis reply after this long' -r
complete -c seckill -n "__fish_seckill_using_subcommand dead-letter" -s q -l quiet -d 'Print nothing for people on success (for cron): no table, no warning, no log or retry line; errors, drift and refused outcomes still print, and so does the output of --format json, csv or prometheus. The exit code is the same either way'
complete -c seckill -n "__fish_seckill_using_subcommand dead-letter" -s v -l verbose -d 'Say on stderr where each setting came from, then each Redis command sent (script name, first key, slot, node) with its latency: what the command does, without a packet capture. Never values or passwords'
complete -c seckill -n "__fish_seckill_using_subcommand dead-letter" -l cluster -d 'Treat the URL (comma-separated URLs allowed) as seed nodes of a Redis Cluster'
complete -c seckill -n "__fish_seckill_using_subcommand dead-letter" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c seckill -n "__fish_seckill_using_subcommand dead-letter" -s V -l version -d 'Print version'
complete -c seckill -n "__fish_seckill_using_subcommand reconcile" -l item -d 'Check only this item (default: every item of the campaign)' -r
complete -c seckill -n "__fish_seckill_using_subcommand reconcile" -l orders-db -d 'Order database URL: sqlite://PATH (relative to the current directory) or mysql://user:pass@host:3306/db. Overrides the campaign file\'s `orders.store`. [default: sqlite://orders.db next to the campaign file]' -r
complete -c seckill -n "__fish_seckill_using_subcommand reconcile" -s c -l campaign -d 'Campaign file (YAML) to work on' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand reconcile" -l format -d 'Output format: a table for people, JSON for scripts; csv (loadtest only), prometheus (status only) for monitoring' -r -f -a "table\t'Human-readable table'
json\t'One JSON document on stdout, for scripts'
csv\t'Comma-separated values (loadtest: redis-benchmark\'s columns first)'
prometheus\t'Prometheus text exposition format (`status` only: node_exporter\'s textfile collector)'"
complete -c seckill -n "__fish_seckill_using_subcommand reconcile" -l tz -d 'Where the times in tables are: `file` (the offset the campaign file writes starts_at in, e.g. +08:00; UTC for a file without times), `utc`, or an offset like +08:00. JSON is always UTC' -r
complete -c seckill -n "__fish_seckill_using_subcommand reconcile" -l redis -d 'Redis URL: redis://[user:pass@]host:port/db, rediss:// for TLS. Overrides the campaign file\'s `redis:`. [default: redis://127.0.0.1:6379/0]' -r
complete -c seckill -n "__fish_seckill_using_subcommand reconcile" -l redis-password-file -d 'A file holding the password for every Redis URL that has none (the URL\'s user, or the default user): no password in `ps`. A final newline is not part of it. [default: $REDISCLI_AUTH, as redis-cli reads it]' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand reconcile" -l tls-ca-cert -d 'PEM file of the CA that signed the server\'s certificate (rediss:// only; default: the system trust store)' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand reconcile" -l connect-timeout -d 'Give up connecting to Redis after this long (e.g. 500ms, 2s)' -r
complete -c seckill -n "__fish_seckill_using_subcommand reconcile" -l response-timeout -d 'Give up waiting for one Redis reply after this long' -r
complete -c seckill -n "__fish_seckill_using_subcommand reconcile" -l repair -d 'Insert orders that are in the stream but missing from the database (idempotent), then check again'
complete -c seckill -n "__fish_seckill_using_subcommand reconcile" -s q -l quiet -d 'Print nothing for people on success (for cron): no table, no warning, no log or retry line; errors, drift and refused outcomes still print, and so does the output of --format json, csv or prometheus. The exit code is the same either way'
complete -c seckill -n "__fish_seckill_using_subcommand reconcile" -s v -l verbose -d 'Say on stderr where each setting came from, then each Redis command sent (script name, first key, slot, node) with its latency: what the command does, without a packet capture. Never values or passwords'
complete -c seckill -n "__fish_seckill_using_subcommand reconcile" -l cluster -d 'Treat the URL (comma-separated URLs allowed) as seed nodes of a Redis Cluster'
complete -c seckill -n "__fish_seckill_using_subcommand reconcile" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c seckill -n "__fish_seckill_using_subcommand reconcile" -s V -l version -d 'Print version'
complete -c seckill -n "__fish_seckill_using_subcommand pay" -l order -d 'The order id `buy` printed' -r
complete -c seckill -n "__fish_seckill_using_subcommand pay" -l item -d 'Look the order up in this item only (default: every item of the campaign)' -r
complete -c seckill -n "__fish_seckill_using_subcommand pay" -s c -l campaign -d 'Campaign file (YAML) to work on' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand pay" -l format -d 'Output format: a table for people, JSON for scripts; csv (loadtest only), prometheus (status only) for monitoring' -r -f -a "table\t'Human-readable table'
json\t'One JSON document on stdout, for scripts'
csv\t'Comma-separated values (loadtest: redis-benchmark\'s columns first)'
prometheus\t'Prometheus text exposition format (`status` only: node_exporter\'s textfile collector)'"
complete -c seckill -n "__fish_seckill_using_subcommand pay" -l tz -d 'Where the times in tables are: `file` (the offset the campaign file writes starts_at in, e.g. +08:00; UTC for a file without times), `utc`, or an offset like +08:00. JSON is always UTC' -r
complete -c seckill -n "__fish_seckill_using_subcommand pay" -l redis -d 'Redis URL: redis://[user:pass@]host:port/db, rediss:// for TLS. Overrides the campaign file\'s `redis:`. [default: redis://127.0.0.1:6379/0]' -r
complete -c seckill -n "__fish_seckill_using_subcommand pay" -l redis-password-file -d 'A file holding the password for every Redis URL that has none (the URL\'s user, or the default user): no password in `ps`. A final newline is not part of it. [default: $REDISCLI_AUTH, as redis-cli reads it]' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand pay" -l tls-ca-cert -d 'PEM file of the CA that signed the server\'s certificate (rediss:// only; default: the system trust store)' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand pay" -l connect-timeout -d 'Give up connecting to Redis after this long (e.g. 500ms, 2s)' -r
complete -c seckill -n "__fish_seckill_using_subcommand pay" -l response-timeout -d 'Give up waiting for one Redis reply after this long' -r
complete -c seckill -n "__fish_seckill_using_subcommand pay" -s q -l quiet -d 'Print nothing for people on success (for cron): no table, no warning, no log or retry line; errors, drift and refused outcomes still print, and so does the output of --format json, csv or prometheus. The exit code is the same either way'
complete -c seckill -n "__fish_seckill_using_subcommand pay" -s v -l verbose -d 'Say on stderr where each setting came from, then each Redis command sent (script name, first key, slot, node) with its latency: what the command does, without a packet capture. Never values or passwords'
complete -c seckill -n "__fish_seckill_using_subcommand pay" -l cluster -d 'Treat the URL (comma-separated URLs allowed) as seed nodes of a Redis Cluster'
complete -c seckill -n "__fish_seckill_using_subcommand pay" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c seckill -n "__fish_seckill_using_subcommand pay" -s V -l version -d 'Print version'
complete -c seckill -n "__fish_seckill_using_subcommand cancel" -l order -d 'The order id `buy` printed' -r
complete -c seckill -n "__fish_seckill_using_subcommand cancel" -l item -d 'Look the order up in this item only (default: every item of the campaign)' -r
complete -c seckill -n "__fish_seckill_using_subcommand cancel" -l reason -d 'Why, kept in the order\'s `cancelled` event and the database row (at most 255 bytes)' -r
complete -c seckill -n "__fish_seckill_using_subcommand cancel" -s c -l campaign -d 'Campaign file (YAML) to work on' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand cancel" -l format -d 'Output format: a table for people, JSON for scripts; csv (loadtest only), prometheus (status only) for monitoring' -r -f -a "table\t'Human-readable table'
json\t'One JSON document on stdout, for scripts'
csv\t'Comma-separated values (loadtest: redis-benchmark\'s columns first)'
prometheus\t'Prometheus text exposition format (`status` only: node_exporter\'s textfile collector)'"
complete -c seckill -n "__fish_seckill_using_subcommand cancel" -l tz -d 'Where the times in tables are: `file` (the offset the campaign file writes starts_at in, e.g. +08:00; UTC for a file without times), `utc`, or an offset like +08:00. JSON is always UTC' -r
complete -c seckill -n "__fish_seckill_using_subcommand cancel" -l redis -d 'Redis URL: redis://[user:pass@]host:port/db, rediss:// for TLS. Overrides the campaign file\'s `redis:`. [default: redis://127.0.0.1:6379/0]' -r
complete -c seckill -n "__fish_seckill_using_subcommand cancel" -l redis-password-file -d 'A file holding the password for every Redis URL that has none (the URL\'s user, or the default user): no password in `ps`. A final newline is not part of it. [default: $REDISCLI_AUTH, as redis-cli reads it]' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand cancel" -l tls-ca-cert -d 'PEM file of the CA that signed the server\'s certificate (rediss:// only; default: the system trust store)' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand cancel" -l connect-timeout -d 'Give up connecting to Redis after this long (e.g. 500ms, 2s)' -r
complete -c seckill -n "__fish_seckill_using_subcommand cancel" -l response-timeout -d 'Give up waiting for one Redis reply after this long' -r
complete -c seckill -n "__fish_seckill_using_subcommand cancel" -s q -l quiet -d 'Print nothing for people on success (for cron): no table, no warning, no log or retry line; errors, drift and refused outcomes still print, and so does the output of --format json, csv or prometheus. The exit code is the same either way'
complete -c seckill -n "__fish_seckill_using_subcommand cancel" -s v -l verbose -d 'Say on stderr where each setting came from, then each Redis command sent (script name, first key, slot, node) with its latency: what the command does, without a packet capture. Never values or passwords'
complete -c seckill -n "__fish_seckill_using_subcommand cancel" -l cluster -d 'Treat the URL (comma-separated URLs allowed) as seed nodes of a Redis Cluster'
complete -c seckill -n "__fish_seckill_using_subcommand cancel" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c seckill -n "__fish_seckill_using_subcommand cancel" -s V -l version -d 'Print version'
complete -c seckill -n "__fish_seckill_using_subcommand expire" -l interval -d 'Pause between passes with --loop (e.g. 500ms, 1s; at least 100ms)' -r
complete -c seckill -n "__fish_seckill_using_subcommand expire" -l metrics-listen -d 'With --loop: serve http://ADDR/metrics and /healthz (200 while Redis answers); :PORT for every interface, or HOST:PORT' -r
complete -c seckill -n "__fish_seckill_using_subcommand expire" -l batch -d 'Orders released per script call (bounds how long Redis is busy per call)' -r
complete -c seckill -n "__fish_seckill_using_subcommand expire" -s c -l campaign -d 'Campaign file (YAML) to work on' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand expire" -l format -d 'Output format: a table for people, JSON for scripts; csv (loadtest only), prometheus (status only) for monitoring' -r -f -a "table\t'Human-readable table'
json\t'One JSON document on stdout, for scripts'
csv\t'Comma-separated values (loadtest: redis-benchmark\'s columns first)'
prometheus\t'Prometheus text exposition format (`status` only: node_exporter\'s textfile collector)'"
complete -c seckill -n "__fish_seckill_using_subcommand expire" -l tz -d 'Where the times in tables are: `file` (the offset the campaign file writes starts_at in, e.g. +08:00; UTC for a file without times), `utc`, or an offset like +08:00. JSON is always UTC' -r
complete -c seckill -n "__fish_seckill_using_subcommand expire" -l redis -d 'Redis URL: redis://[user:pass@]host:port/db, rediss:// for TLS. Overrides the campaign file\'s `redis:`. [default: redis://127.0.0.1:6379/0]' -r
complete -c seckill -n "__fish_seckill_using_subcommand expire" -l redis-password-file -d 'A file holding the password for every Redis URL that has none (the URL\'s user, or the default user): no password in `ps`. A final newline is not part of it. [default: $REDISCLI_AUTH, as redis-cli reads it]' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand expire" -l tls-ca-cert -d 'PEM file of the CA that signed the server\'s certificate (rediss:// only; default: the system trust store)' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand expire" -l connect-timeout -d 'Give up connecting to Redis after this long (e.g. 500ms, 2s)' -r
complete -c seckill -n "__fish_seckill_using_subcommand expire" -l response-timeout -d 'Give up waiting for one Redis reply after this long' -r
complete -c seckill -n "__fish_seckill_using_subcommand expire" -l loop -d 'Keep running: a pass every --interval until SIGINT/SIGTERM'
complete -c seckill -n "__fish_seckill_using_subcommand expire" -s q -l quiet -d 'Print nothing for people on success (for cron): no table, no warning, no log or retry line; errors, drift and refused outcomes still print, and so does the output of --format json, csv or prometheus. The exit code is the same either way'
complete -c seckill -n "__fish_seckill_using_subcommand expire" -s v -l verbose -d 'Say on stderr where each setting came from, then each Redis command sent (script name, first key, slot, node) with its latency: what the command does, without a packet capture. Never values or passwords'
complete -c seckill -n "__fish_seckill_using_subcommand expire" -l cluster -d 'Treat the URL (comma-separated URLs allowed) as seed nodes of a Redis Cluster'
complete -c seckill -n "__fish_seckill_using_subcommand expire" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c seckill -n "__fish_seckill_using_subcommand expire" -s V -l version -d 'Print version'
complete -c seckill -n "__fish_seckill_using_subcommand status" -l item -d 'Only this item (default: every item of the campaign)' -r
complete -c seckill -n "__fish_seckill_using_subcommand status" -l watch -d 'Refresh every DURATION until Ctrl-C (at least 100ms): in place on a terminal (a table of one row per item when the full view does not fit); one block per sample when piped' -r
complete -c seckill -n "__fish_seckill_using_subcommand status" -l max-lag -d 'With --check/--nagios: lag (never delivered) or pending (delivered, not acked) above N is a problem' -r
complete -c seckill -n "__fish_seckill_using_subcommand status" -l reconcile-at -d 'With --check/--nagios: keys that expire before the next reconcile are a problem. HH:MM is the next such time of day on this machine\'s clock and time zone (as cron reads it), or an RFC 3339 time' -r
complete -c seckill -n "__fish_seckill_using_subcommand status" -l grace -d 'With --check/--nagios: how late a loop\'s work may be before it is a problem — a reservation past its payment deadline (expire), the room\'s shuffle or fan-out (queue admit)' -r
complete -c seckill -n "__fish_seckill_using_subcommand status" -s c -l campaign -d 'Campaign file (YAML) to work on' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand status" -l format -d 'Output format: a table for people, JSON for scripts; csv (loadtest only), prometheus (status only) for monitoring' -r -f -a "table\t'Human-readable table'
json\t'One JSON document on stdout, for scripts'
csv\t'Comma-separated values (loadtest: redis-benchmark\'s columns first)'
prometheus\t'Prometheus text exposition format (`status` only: node_exporter\'s textfile collector)'"
complete -c seckill -n "__fish_seckill_using_subcommand status" -l tz -d 'Where the times in tables are: `file` (the offset the campaign file writes starts_at in, e.g. +08:00; UTC for a file without times), `utc`, or an offset like +08:00. JSON is always UTC' -r
complete -c seckill -n "__fish_seckill_using_subcommand status" -l redis -d 'Redis URL: redis://[user:pass@]host:port/db, rediss:// for TLS. Overrides the campaign file\'s `redis:`. [default: redis://127.0.0.1:6379/0]' -r
complete -c seckill -n "__fish_seckill_using_subcommand status" -l redis-password-file -d 'A file holding the password for every Redis URL that has none (the URL\'s user, or the default user): no password in `ps`. A final newline is not part of it. [default: $REDISCLI_AUTH, as redis-cli reads it]' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand status" -l tls-ca-cert -d 'PEM file of the CA that signed the server\'s certificate (rediss:// only; default: the system trust store)' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand status" -l connect-timeout -d 'Give up connecting to Redis after this long (e.g. 500ms, 2s)' -r
complete -c seckill -n "__fish_seckill_using_subcommand status" -l response-timeout -d 'Give up waiting for one Redis reply after this long' -r
complete -c seckill -n "__fish_seckill_using_subcommand status" -l check -d 'A probe for cron: one line per problem and an exit code per kind (40 not preheated, 41 kill switch ON, 42 keys expire before --reconcile-at, 43 lag or pending above --max-lag, 44 reservations overdue, 45 dead letters, 46 the room\'s admitter late; the lowest wins), 0 and "ok" when there is none. For Nagios, use --nagios'
complete -c seckill -n "__fish_seckill_using_subcommand status" -l nagios -d 'The probe for Nagios (and Icinga, Sensu): --check\'s problems as a plugin\'s output and exit code — 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN (Redis could not be read) — one status line with performance data per item, then one line per problem'
complete -c seckill -n "__fish_seckill_using_subcommand status" -s q -l quiet -d 'Print nothing for people on success (for cron): no table, no warning, no log or retry line; errors, drift and refused outcomes still print, and so does the output of --format json, csv or prometheus. The exit code is the same either way'
complete -c seckill -n "__fish_seckill_using_subcommand status" -s v -l verbose -d 'Say on stderr where each setting came from, then each Redis command sent (script name, first key, slot, node) with its latency: what the command does, without a packet capture. Never values or passwords'
complete -c seckill -n "__fish_seckill_using_subcommand status" -l cluster -d 'Treat the URL (comma-separated URLs allowed) as seed nodes of a Redis Cluster'
complete -c seckill -n "__fish_seckill_using_subcommand status" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c seckill -n "__fish_seckill_using_subcommand status" -s V -l version -d 'Print version'
complete -c seckill -n "__fish_seckill_using_subcommand doctor" -l role -d 'The role whose whole path is checked on every node: connecting, the commands its subcommands send outside scripts, each script and every command inside them' -r -f -a "buyer\t'The web tier: `buy`, `serve`, the waiting room\'s `queue join` and `register` (and `rebalance`, which uses the buyer\'s sweep scripts)'
consumer\t'`consume` and `pending-claim`: the order streams into the database'
operator\t'Everything else: preheat, init, the kill switch, reconcile, pay, cancel, expire, loadtest'"
complete -c seckill -n "__fish_seckill_using_subcommand doctor" -l user -d 'The Redis user playing --role [default: the URL\'s own user, which then checks itself without admin rights]. Another user is checked with ACL DRYRUN: run doctor as an admin' -r
complete -c seckill -n "__fish_seckill_using_subcommand doctor" -l reconcile-at -d 'When the nightly `reconcile` runs (HH:MM, this machine\'s local time, as cron reads it): the keys must outlive it [default: within 24 h of ends_at]' -r
complete -c seckill -n "__fish_seckill_using_subcommand doctor" -l orders-db -d 'Order database URL: sqlite://PATH (relative to the current directory) or mysql://user:pass@host:3306/db. Overrides the campaign file\'s `orders.store`. [default: sqlite://orders.db next to the campaign file]' -r
complete -c seckill -n "__fish_seckill_using_subcommand doctor" -s c -l campaign -d 'Campaign file (YAML) to work on' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand doctor" -l format -d 'Output format: a table for people, JSON for scripts; csv (loadtest only), prometheus (status only) for monitoring' -r -f -a "table\t'Human-readable table'
json\t'One JSON document on stdout, for scripts'
csv\t'Comma-separated values (loadtest: redis-benchmark\'s columns first)'
prometheus\t'Prometheus text exposition format (`status` only: node_exporter\'s textfile collector)'"
complete -c seckill -n "__fish_seckill_using_subcommand doctor" -l tz -d 'Where the times in tables are: `file` (the offset the campaign file writes starts_at in, e.g. +08:00; UTC for a file without times), `utc`, or an offset like +08:00. JSON is always UTC' -r
complete -c seckill -n "__fish_seckill_using_subcommand doctor" -l redis -d 'Redis URL: redis://[user:pass@]host:port/db, rediss:// for TLS. Overrides the campaign file\'s `redis:`. [default: redis://127.0.0.1:6379/0]' -r
complete -c seckill -n "__fish_seckill_using_subcommand doctor" -l redis-password-file -d 'A file holding the password for every Redis URL that has none (the URL\'s user, or the default user): no password in `ps`. A final newline is not part of it. [default: $REDISCLI_AUTH, as redis-cli reads it]' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand doctor" -l tls-ca-cert -d 'PEM file of the CA that signed the server\'s certificate (rediss:// only; default: the system trust store)' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand doctor" -l connect-timeout -d 'Give up connecting to Redis after this long (e.g. 500ms, 2s)' -r
complete -c seckill -n "__fish_seckill_using_subcommand doctor" -l response-timeout -d 'Give up waiting for one Redis reply after this long' -r
complete -c seckill -n "__fish_seckill_using_subcommand doctor" -l allow-unchecked -d 'A check this user may not make (its ACL refuses INFO, CONFIG GET, CLUSTER NODES, ACL LIST, or the permission check itself) is a warning instead of a no-go. Without it, what doctor could not see is never taken as passed'
complete -c seckill -n "__fish_seckill_using_subcommand doctor" -s q -l quiet -d 'Print nothing for people on success (for cron): no table, no warning, no log or retry line; errors, drift and refused outcomes still print, and so does the output of --format json, csv or prometheus. The exit code is the same either way'
complete -c seckill -n "__fish_seckill_using_subcommand doctor" -s v -l verbose -d 'Say on stderr where each setting came from, then each Redis command sent (script name, first key, slot, node) with its latency: what the command does, without a packet capture. Never values or passwords'
complete -c seckill -n "__fish_seckill_using_subcommand doctor" -l cluster -d 'Treat the URL (comma-separated URLs allowed) as seed nodes of a Redis Cluster'
complete -c seckill -n "__fish_seckill_using_subcommand doctor" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c seckill -n "__fish_seckill_using_subcommand doctor" -s V -l version -d 'Print version'
complete -c seckill -n "__fish_seckill_using_subcommand campaigns" -s c -l campaign -d 'Campaign file (YAML) to work on' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand campaigns" -l format -d 'Output format: a table for people, JSON for scripts; csv (loadtest only), prometheus (status only) for monitoring' -r -f -a "table\t'Human-readable table'
json\t'One JSON document on stdout, for scripts'
csv\t'Comma-separated values (loadtest: redis-benchmark\'s columns first)'
prometheus\t'Prometheus text exposition format (`status` only: node_exporter\'s textfile collector)'"
complete -c seckill -n "__fish_seckill_using_subcommand campaigns" -l tz -d 'Where the times in tables are: `file` (the offset the campaign file writes starts_at in, e.g. +08:00; UTC for a file without times), `utc`, or an offset like +08:00. JSON is always UTC' -r
complete -c seckill -n "__fish_seckill_using_subcommand campaigns" -l redis -d 'Redis URL: redis://[user:pass@]host:port/db, rediss:// for TLS. Overrides the campaign file\'s `redis:`. [default: redis://127.0.0.1:6379/0]' -r
complete -c seckill -n "__fish_seckill_using_subcommand campaigns" -l redis-password-file -d 'A file holding the password for every Redis URL that has none (the URL\'s user, or the default user): no password in `ps`. A final newline is not part of it. [default: $REDISCLI_AUTH, as redis-cli reads it]' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand campaigns" -l tls-ca-cert -d 'PEM file of the CA that signed the server\'s certificate (rediss:// only; default: the system trust store)' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand campaigns" -l connect-timeout -d 'Give up connecting to Redis after this long (e.g. 500ms, 2s)' -r
complete -c seckill -n "__fish_seckill_using_subcommand campaigns" -l response-timeout -d 'Give up waiting for one Redis reply after this long' -r
complete -c seckill -n "__fish_seckill_using_subcommand campaigns" -s q -l quiet -d 'Print nothing for people on success (for cron): no table, no warning, no log or retry line; errors, drift and refused outcomes still print, and so does the output of --format json, csv or prometheus. The exit code is the same either way'
complete -c seckill -n "__fish_seckill_using_subcommand campaigns" -s v -l verbose -d 'Say on stderr where each setting came from, then each Redis command sent (script name, first key, slot, node) with its latency: what the command does, without a packet capture. Never values or passwords'
complete -c seckill -n "__fish_seckill_using_subcommand campaigns" -l cluster -d 'Treat the URL (comma-separated URLs allowed) as seed nodes of a Redis Cluster'
complete -c seckill -n "__fish_seckill_using_subcommand campaigns" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c seckill -n "__fish_seckill_using_subcommand campaigns" -s V -l version -d 'Print version'
complete -c seckill -n "__fish_seckill_using_subcommand serve" -l listen -d 'Address to listen on: HOST:PORT, or :PORT for every interface (port 0 picks a free one)' -r
complete -c seckill -n "__fish_seckill_using_subcommand serve" -l max-in-flight -d 'Requests answered at once; beyond them 503 with Retry-After, never a queue' -r
complete -c seckill -n "__fish_seckill_using_subcommand serve" -l header-timeout -d 'A client must send its request headers within this (a slow client is disconnected)' -r
complete -c seckill -n "__fish_seckill_using_subcommand serve" -l body-timeout -d '... and its body within this (else 408)' -r
complete -c seckill -n "__fish_seckill_using_subcommand serve" -l shutdown-grace -d 'After SIGTERM, requests in flight get this long to finish' -r
complete -c seckill -n "__fish_seckill_using_subcommand serve" -l recheck -d 'How often each item\'s state is re-read: the bound on a cached refusal (sold out, outside the window) outliving units that came back' -r
complete -c seckill -n "__fish_seckill_using_subcommand serve" -l wait-replicas -d 'After an `ok`, WAIT until this many replicas confirmed it, as `buy --wait-replicas`' -r
complete -c seckill -n "__fish_seckill_using_subcommand serve" -l wait-timeout -d 'Longest WAIT for --wait-replicas (shorter than --response-timeout)' -r
complete -c seckill -n "__fish_seckill_using_subcommand serve" -l operator-token-file -d 'A file holding the bearer token of the operator endpoints (pay, cancel); without it they are off (404). serve then refuses to start (exit 2) unless their Redis credential may run the pay and release scripts (asked of Redis\'s ACL, nothing written)' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand serve" -l operator-redis -d 'Redis URL (comma-separated seeds with --cluster) the operator endpoints use, as the operator\'s user: the shop\'s buyer credential may not pay or cancel [default: --redis]. Needs --operator-token-file' -r
complete -c seckill -n "__fish_seckill_using_subcommand serve" -l operator-redis-password-file -d 'A file holding the password of --operator-redis when its URLs have none (no password in `ps`)' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand serve" -l workers -d 'Threads answering HTTP [default: the cores]' -r
complete -c seckill -n "__fish_seckill_using_subcommand serve" -s c -l campaign -d 'Campaign file (YAML) to work on' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand serve" -l format -d 'Output format: a table for people, JSON for scripts; csv (loadtest only), prometheus (status only) for monitoring' -r -f -a "table\t'Human-readable table'
json\t'One JSON document on stdout, for scripts'
csv\t'Comma-separated values (loadtest: redis-benchmark\'s columns first)'
prometheus\t'Prometheus text exposition format (`status` only: node_exporter\'s textfile collector)'"
complete -c seckill -n "__fish_seckill_using_subcommand serve" -l tz -d 'Where the times in tables are: `file` (the offset the campaign file writes starts_at in, e.g. +08:00; UTC for a file without times), `utc`, or an offset like +08:00. JSON is always UTC' -r
complete -c seckill -n "__fish_seckill_using_subcommand serve" -l redis -d 'Redis URL: redis://[user:pass@]host:port/db, rediss:// for TLS. Overrides the campaign file\'s `redis:`. [default: redis://127.0.0.1:6379/0]' -r
complete -c seckill -n "__fish_seckill_using_subcommand serve" -l redis-password-file -d 'A file holding the password for every Redis URL that has none (the URL\'s user, or the default user): no password in `ps`. A final newline is not part of it. [default: $REDISCLI_AUTH, as redis-cli reads it]' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand serve" -l tls-ca-cert -d 'PEM file of the CA that signed the server\'s certificate (rediss:// only; default: the system trust store)' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand serve" -l connect-timeout -d 'Give up connecting to Redis after this long (e.g. 500ms, 2s)' -r
complete -c seckill -n "__fish_seckill_using_subcommand serve" -l response-timeout -d 'Give up waiting for one Redis reply after this long' -r
complete -c seckill -n "__fish_seckill_using_subcommand serve" -s q -l quiet -d 'Print nothing for people on success (for cron): no table, no warning, no log or retry line; errors, drift and refused outcomes still print, and so does the output of --format json, csv or prometheus. The exit code is the same either way'
complete -c seckill -n "__fish_seckill_using_subcommand serve" -s v -l verbose -d 'Say on stderr where each setting came from, then each Redis command sent (script name, first key, slot, node) with its latency: what the command does, without a packet capture. Never values or passwords'
complete -c seckill -n "__fish_seckill_using_subcommand serve" -l cluster -d 'Treat the URL (comma-separated URLs allowed) as seed nodes of a Redis Cluster'
complete -c seckill -n "__fish_seckill_using_subcommand serve" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c seckill -n "__fish_seckill_using_subcommand serve" -s V -l version -d 'Print version'
complete -c seckill -n "__fish_seckill_using_subcommand queue; and not __fish_seen_subcommand_from join position status pause resume admit shuffle penalize help" -s c -l campaign -d 'Campaign file (YAML) to work on' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand queue; and not __fish_seen_subcommand_from join position status pause resume admit shuffle penalize help" -l format -d 'Output format: a table for people, JSON for scripts; csv (loadtest only), prometheus (status only) for monitoring' -r -f -a "table\t'Human-readable table'
json\t'One JSON document on stdout, for scripts'
csv\t'Comma-separated values (loadtest: redis-benchmark\'s columns first)'
prometheus\t'Prometheus text exposition format (`status` only: node_exporter\'s textfile collector)'"
complete -c seckill -n "__fish_seckill_using_subcommand queue; and not __fish_seen_subcommand_from join position status pause resume admit shuffle penalize help" -l tz -d 'Where the times in tables are: `file` (the offset the campaign file writes starts_at in, e.g. +08:00; UTC for a file without times), `utc`, or an offset like +08:00. JSON is always UTC' -r
complete -c seckill -n "__fish_seckill_using_subcommand queue; and not __fish_seen_subcommand_from join position status pause resume admit shuffle penalize help" -l redis -d 'Redis URL: redis://[user:pass@]host:port/db, rediss:// for TLS. Overrides the campaign file\'s `redis:`. [default: redis://127.0.0.1:6379/0]' -r
complete -c seckill -n "__fish_seckill_using_subcommand queue; and not __fish_seen_subcommand_from join position status pause resume admit shuffle penalize help" -l redis-password-file -d 'A file holding the password for every Redis URL that has none (the URL\'s user, or the default user): no password in `ps`. A final newline is not part of it. [default: $REDISCLI_AUTH, as redis-cli reads it]' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand queue; and not __fish_seen_subcommand_from join position status pause resume admit shuffle penalize help" -l tls-ca-cert -d 'PEM file of the CA that signed the server\'s certificate (rediss:// only; default: the system trust store)' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand queue; and not __fish_seen_subcommand_from join position status pause resume admit shuffle penalize help" -l connect-timeout -d 'Give up connecting to Redis after this long (e.g. 500ms, 2s)' -r
complete -c seckill -n "__fish_seckill_using_subcommand queue; and not __fish_seen_subcommand_from join position status pause resume admit shuffle penalize help" -l response-timeout -d 'Give up waiting for one Redis reply after this long' -r
complete -c seckill -n "__fish_seckill_using_subcommand queue; and not __fish_seen_subcommand_from join position status pause resume admit shuffle penalize help" -s q -l quiet -d 'Print nothing for people on success (for cron): no table, no warning, no log or retry line; errors, drift and refused outcomes still print, and so does the output of --format json, csv or prometheus. The exit code is the same either way'
complete -c seckill -n "__fish_seckill_using_subcommand queue; and not __fish_seen_subcommand_from join position status pause resume admit shuffle penalize help" -s v -l verbose -d 'Say on stderr where each setting came from, then each Redis command sent (script name, first key, slot, node) with its latency: what the command does, without a packet capture. Never values or passwords'
complete -c seckill -n "__fish_seckill_using_subcommand queue; and not __fish_seen_subcommand_from join position status pause resume admit shuffle penalize help" -l cluster -d 'Treat the URL (comma-separated URLs allowed) as seed nodes of a Redis Cluster'
complete -c seckill -n "__fish_seckill_using_subcommand queue; and not __fish_seen_subcommand_from join position status pause resume admit shuffle penalize help" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c seckill -n "__fish_seckill_using_subcommand queue; and not __fish_seen_subcommand_from join position status pause resume admit shuffle penalize help" -s V -l version -d 'Print version'
complete -c seckill -n "__fish_seckill_using_subcommand queue; and not __fish_seen_subcommand_from join position status pause resume admit shuffle penalize help" -f -a "join" -d 'Join the item\'s room (a repeat join returns the same position); exit code: the first refused join\'s outcome'
complete -c seckill -n "__fish_seckill_using_subcommand queue; and not __fish_seen_subcommand_from join position status pause resume admit shuffle penalize help" -f -a "position" -d 'Where users stand: position, serving position, wait; exit code: the first user\'s refusal a buy would get'
complete -c seckill -n "__fish_seckill_using_subcommand queue; and not __fish_seen_subcommand_from join position status pause resume admit shuffle penalize help" -f -a "status" -d 'The room of each item: joined, admitted, active, rate, pauses, the wait at the tail, the pre-queue and its seed'
complete -c seckill -n "__fish_seckill_using_subcommand queue; and not __fish_seen_subcommand_from join position status pause resume admit shuffle penalize help" -f -a "pause" -d 'Pause the room: nobody not admitted yet is admitted until the resume (rate mode: the clock stops). The kill switch pauses it too'
complete -c seckill -n "__fish_seckill_using_subcommand queue; and not __fish_seen_subcommand_from join position status pause resume admit shuffle penalize help" -f -a "resume" -d 'Resume a room you paused (one the kill switch holds resumes with `shutdown-switch off`)'
complete -c seckill -n "__fish_seckill_using_subcommand queue; and not __fish_seen_subcommand_from join position status pause resume admit shuffle penalize help" -f -a "admit" -d 'What a room needs beside the sale: max_active\'s admitter, the pre-queue\'s shuffle at the start, a bucketed item\'s fan-out; once, or --loop (a service: it waits out Redis stalls, and each pass leaves a heartbeat the buy and preheat read)'
complete -c seckill -n "__fish_seckill_using_subcommand queue; and not __fish_seen_subcommand_from join position status pause resume admit shuffle penalize help" -f -a "shuffle" -d 'Shuffle the pre-queue once starts_at has passed (Redis clock), or --verify a shuffle from its revealed seed'
complete -c seckill -n "__fish_seckill_using_subcommand queue; and not __fish_seen_subcommand_from join position status pause resume admit shuffle penalize help" -f -a "penalize" -d 'The risk list: delay a user\'s admission, block a user for good, or clear the entry'
complete -c seckill -n "__fish_seckill_using_subcommand queue; and not __fish_seen_subcommand_from join position status pause resume admit shuffle penalize help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from join" -l item -d 'The item (an `id` from the campaign\'s `items`, with a waiting room)' -r
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from join" -l user -d 'A shopper\'s user id (repeat the flag for several)' -r
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from join" -s c -l campaign -d 'Campaign file (YAML) to work on' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from join" -l format -d 'Output format: a table for people, JSON for scripts; csv (loadtest only), prometheus (status only) for monitoring' -r -f -a "table\t'Human-readable table'
json\t'One JSON document on stdout, for scripts'
csv\t'Comma-separated values (loadtest: redis-benchmark\'s columns first)'
prometheus\t'Prometheus text exposition format (`status` only: node_exporter\'s textfile collector)'"
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from join" -l tz -d 'Where the times in tables are: `file` (the offset the campaign file writes starts_at in, e.g. +08:00; UTC for a file without times), `utc`, or an offset like +08:00. JSON is always UTC' -r
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from join" -l redis -d 'Redis URL: redis://[user:pass@]host:port/db, rediss:// for TLS. Overrides the campaign file\'s `redis:`. [default: redis://127.0.0.1:6379/0]' -r
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from join" -l redis-password-file -d 'A file holding the password for every Redis URL that has none (the URL\'s user, or the default user): no password in `ps`. A final newline is not part of it. [default: $REDISCLI_AUTH, as redis-cli reads it]' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from join" -l tls-ca-cert -d 'PEM file of the CA that signed the server\'s certificate (rediss:// only; default: the system trust store)' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from join" -l connect-timeout -d 'Give up connecting to Redis after this long (e.g. 500ms, 2s)' -r
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from join" -l response-timeout -d 'Give up waiting for one Redis reply after this long' -r
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from join" -s q -l quiet -d 'Print nothing for people on success (for cron): no table, no warning, no log or retry line; errors, drift and refused outcomes still print, and so does the output of --format json, csv or prometheus. The exit code is the same either way'
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from join" -s v -l verbose -d 'Say on stderr where each setting came from, then each Redis command sent (script name, first key, slot, node) with its latency: what the command does, without a packet capture. Never values or passwords'
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from join" -l cluster -d 'Treat the URL (comma-separated URLs allowed) as seed nodes of a Redis Cluster'
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from join" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from join" -s V -l version -d 'Print version'
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from position" -l item -d 'The item (an `id` from the campaign\'s `items`, with a waiting room)' -r
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from position" -l user -d 'A shopper\'s user id (repeat the flag for several)' -r
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from position" -s c -l campaign -d 'Campaign file (YAML) to work on' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from position" -l format -d 'Output format: a table for people, JSON for scripts; csv (loadtest only), prometheus (status only) for monitoring' -r -f -a "table\t'Human-readable table'
json\t'One JSON document on stdout, for scripts'
csv\t'Comma-separated values (loadtest: redis-benchmark\'s columns first)'
prometheus\t'Prometheus text exposition format (`status` only: node_exporter\'s textfile collector)'"
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from position" -l tz -d 'Where the times in tables are: `file` (the offset the campaign file writes starts_at in, e.g. +08:00; UTC for a file without times), `utc`, or an offset like +08:00. JSON is always UTC' -r
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from position" -l redis -d 'Redis URL: redis://[user:pass@]host:port/db, rediss:// for TLS. Overrides the campaign file\'s `redis:`. [default: redis://127.0.0.1:6379/0]' -r
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from position" -l redis-password-file -d 'A file holding the password for every Redis URL that has none (the URL\'s user, or the default user): no password in `ps`. A final newline is not part of it. [default: $REDISCLI_AUTH, as redis-cli reads it]' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from position" -l tls-ca-cert -d 'PEM file of the CA that signed the server\'s certificate (rediss:// only; default: the system trust store)' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from position" -l connect-timeout -d 'Give up connecting to Redis after this long (e.g. 500ms, 2s)' -r
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from position" -l response-timeout -d 'Give up waiting for one Redis reply after this long' -r
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from position" -s q -l quiet -d 'Print nothing for people on success (for cron): no table, no warning, no log or retry line; errors, drift and refused outcomes still print, and so does the output of --format json, csv or prometheus. The exit code is the same either way'
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from position" -s v -l verbose -d 'Say on stderr where each setting came from, then each Redis command sent (script name, first key, slot, node) with its latency: what the command does, without a packet capture. Never values or passwords'
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from position" -l cluster -d 'Treat the URL (comma-separated URLs allowed) as seed nodes of a Redis Cluster'
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from position" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from position" -s V -l version -d 'Print version'
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from status" -l item -d 'Only this item (default: every item with a waiting room)' -r
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from status" -s c -l campaign -d 'Campaign file (YAML) to work on' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from status" -l format -d 'Output format: a table for people, JSON for scripts; csv (loadtest only), prometheus (status only) for monitoring' -r -f -a "table\t'Human-readable table'
json\t'One JSON document on stdout, for scripts'
csv\t'Comma-separated values (loadtest: redis-benchmark\'s columns first)'
prometheus\t'Prometheus text exposition format (`status` only: node_exporter\'s textfile collector)'"
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from status" -l tz -d 'Where the times in tables are: `file` (the offset the campaign file writes starts_at in, e.g. +08:00; UTC for a file without times), `utc`, or an offset like +08:00. JSON is always UTC' -r
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from status" -l redis -d 'Redis URL: redis://[user:pass@]host:port/db, rediss:// for TLS. Overrides the campaign file\'s `redis:`. [default: redis://127.0.0.1:6379/0]' -r
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from status" -l redis-password-file -d 'A file holding the password for every Redis URL that has none (the URL\'s user, or the default user): no password in `ps`. A final newline is not part of it. [default: $REDISCLI_AUTH, as redis-cli reads it]' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from status" -l tls-ca-cert -d 'PEM file of the CA that signed the server\'s certificate (rediss:// only; default: the system trust store)' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from status" -l connect-timeout -d 'Give up connecting to Redis after this long (e.g. 500ms, 2s)' -r
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from status" -l response-timeout -d 'Give up waiting for one Redis reply after this long' -r
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from status" -s q -l quiet -d 'Print nothing for people on success (for cron): no table, no warning, no log or retry line; errors, drift and refused outcomes still print, and so does the output of --format json, csv or prometheus. The exit code is the same either way'
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from status" -s v -l verbose -d 'Say on stderr where each setting came from, then each Redis command sent (script name, first key, slot, node) with its latency: what the command does, without a packet capture. Never values or passwords'
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from status" -l cluster -d 'Treat the URL (comma-separated URLs allowed) as seed nodes of a Redis Cluster'
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from status" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from status" -s V -l version -d 'Print version'
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from pause" -l item -d 'Only this item (default: every item with a waiting room)' -r
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from pause" -s c -l campaign -d 'Campaign file (YAML) to work on' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from pause" -l format -d 'Output format: a table for people, JSON for scripts; csv (loadtest only), prometheus (status only) for monitoring' -r -f -a "table\t'Human-readable table'
json\t'One JSON document on stdout, for scripts'
csv\t'Comma-separated values (loadtest: redis-benchmark\'s columns first)'
prometheus\t'Prometheus text exposition format (`status` only: node_exporter\'s textfile collector)'"
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from pause" -l tz -d 'Where the times in tables are: `file` (the offset the campaign file writes starts_at in, e.g. +08:00; UTC for a file without times), `utc`, or an offset like +08:00. JSON is always UTC' -r
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from pause" -l redis -d 'Redis URL: redis://[user:pass@]host:port/db, rediss:// for TLS. Overrides the campaign file\'s `redis:`. [default: redis://127.0.0.1:6379/0]' -r
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from pause" -l redis-password-file -d 'A file holding the password for every Redis URL that has none (the URL\'s user, or the default user): no password in `ps`. A final newline is not part of it. [default: $REDISCLI_AUTH, as redis-cli reads it]' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from pause" -l tls-ca-cert -d 'PEM file of the CA that signed the server\'s certificate (rediss:// only; default: the system trust store)' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from pause" -l connect-timeout -d 'Give up connecting to Redis after this long (e.g. 500ms, 2s)' -r
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from pause" -l response-timeout -d 'Give up waiting for one Redis reply after this long' -r
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from pause" -s q -l quiet -d 'Print nothing for people on success (for cron): no table, no warning, no log or retry line; errors, drift and refused outcomes still print, and so does the output of --format json, csv or prometheus. The exit code is the same either way'
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from pause" -s v -l verbose -d 'Say on stderr where each setting came from, then each Redis command sent (script name, first key, slot, node) with its latency: what the command does, without a packet capture. Never values or passwords'
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from pause" -l cluster -d 'Treat the URL (comma-separated URLs allowed) as seed nodes of a Redis Cluster'
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from pause" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from pause" -s V -l version -d 'Print version'
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from resume" -l item -d 'Only this item (default: every item with a waiting room)' -r
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from resume" -s c -l campaign -d 'Campaign file (YAML) to work on' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from resume" -l format -d 'Output format: a table for people, JSON for scripts; csv (loadtest only), prometheus (status only) for monitoring' -r -f -a "table\t'Human-readable table'
json\t'One JSON document on stdout, for scripts'
csv\t'Comma-separated values (loadtest: redis-benchmark\'s columns first)'
prometheus\t'Prometheus text exposition format (`status` only: node_exporter\'s textfile collector)'"
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from resume" -l tz -d 'Where the times in tables are: `file` (the offset the campaign file writes starts_at in, e.g. +08:00; UTC for a file without times), `utc`, or an offset like +08:00. JSON is always UTC' -r
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from resume" -l redis -d 'Redis URL: redis://[user:pass@]host:port/db, rediss:// for TLS. Overrides the campaign file\'s `redis:`. [default: redis://127.0.0.1:6379/0]' -r
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from resume" -l redis-password-file -d 'A file holding the password for every Redis URL that has none (the URL\'s user, or the default user): no password in `ps`. A final newline is not part of it. [default: $REDISCLI_AUTH, as redis-cli reads it]' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from resume" -l tls-ca-cert -d 'PEM file of the CA that signed the server\'s certificate (rediss:// only; default: the system trust store)' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from resume" -l connect-timeout -d 'Give up connecting to Redis after this long (e.g. 500ms, 2s)' -r
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from resume" -l response-timeout -d 'Give up waiting for one Redis reply after this long' -r
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from resume" -s q -l quiet -d 'Print nothing for people on success (for cron): no table, no warning, no log or retry line; errors, drift and refused outcomes still print, and so does the output of --format json, csv or prometheus. The exit code is the same either way'
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from resume" -s v -l verbose -d 'Say on stderr where each setting came from, then each Redis command sent (script name, first key, slot, node) with its latency: what the command does, without a packet capture. Never values or passwords'
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from resume" -l cluster -d 'Treat the URL (comma-separated URLs allowed) as seed nodes of a Redis Cluster'
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from resume" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from resume" -s V -l version -d 'Print version'
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from admit" -l item -d 'Only this item (default: every item with a waiting room)' -r
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from admit" -l interval -d 'Pause between passes with --loop (at least 100ms)' -r
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from admit" -l metrics-listen -d 'With --loop: serve http://ADDR/metrics and /healthz (200 while Redis answers); :PORT for every interface, or HOST:PORT' -r
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from admit" -l batch -d 'Positions per script call (bounds how long Redis is busy per call)' -r
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from admit" -s c -l campaign -d 'Campaign file (YAML) to work on' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from admit" -l format -d 'Output format: a table for people, JSON for scripts; csv (loadtest only), prometheus (status only) for monitoring' -r -f -a "table\t'Human-readable table'
json\t'One JSON document on stdout, for scripts'
csv\t'Comma-separated values (loadtest: redis-benchmark\'s columns first)'
prometheus\t'Prometheus text exposition format (`status` only: node_exporter\'s textfile collector)'"
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from admit" -l tz -d 'Where the times in tables are: `file` (the offset the campaign file writes starts_at in, e.g. +08:00; UTC for a file without times), `utc`, or an offset like +08:00. JSON is always UTC' -r
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from admit" -l redis -d 'Redis URL: redis://[user:pass@]host:port/db, rediss:// for TLS. Overrides the campaign file\'s `redis:`. [default: redis://127.0.0.1:6379/0]' -r
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from admit" -l redis-password-file -d 'A file holding the password for every Redis URL that has none (the URL\'s user, or the default user): no password in `ps`. A final newline is not part of it. [default: $REDISCLI_AUTH, as redis-cli reads it]' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from admit" -l tls-ca-cert -d 'PEM file of the CA that signed the server\'s certificate (rediss:// only; default: the system trust store)' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from admit" -l connect-timeout -d 'Give up connecting to Redis after this long (e.g. 500ms, 2s)' -r
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from admit" -l response-timeout -d 'Give up waiting for one Redis reply after this long' -r
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from admit" -l loop -d 'Keep running: a pass every --interval until SIGINT/SIGTERM'
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from admit" -s q -l quiet -d 'Print nothing for people on success (for cron): no table, no warning, no log or retry line; errors, drift and refused outcomes still print, and so does the output of --format json, csv or prometheus. The exit code is the same either way'
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from admit" -s v -l verbose -d 'Say on stderr where each setting came from, then each Redis command sent (script name, first key, slot, node) with its latency: what the command does, without a packet capture. Never values or passwords'
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from admit" -l cluster -d 'Treat the URL (comma-separated URLs allowed) as seed nodes of a Redis Cluster'
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from admit" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from admit" -s V -l version -d 'Print version'
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from shuffle" -l item -d 'Only this item (default: every item with a waiting room)' -r
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from shuffle" -s c -l campaign -d 'Campaign file (YAML) to work on' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from shuffle" -l format -d 'Output format: a table for people, JSON for scripts; csv (loadtest only), prometheus (status only) for monitoring' -r -f -a "table\t'Human-readable table'
json\t'One JSON document on stdout, for scripts'
csv\t'Comma-separated values (loadtest: redis-benchmark\'s columns first)'
prometheus\t'Prometheus text exposition format (`status` only: node_exporter\'s textfile collector)'"
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from shuffle" -l tz -d 'Where the times in tables are: `file` (the offset the campaign file writes starts_at in, e.g. +08:00; UTC for a file without times), `utc`, or an offset like +08:00. JSON is always UTC' -r
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from shuffle" -l redis -d 'Redis URL: redis://[user:pass@]host:port/db, rediss:// for TLS. Overrides the campaign file\'s `redis:`. [default: redis://127.0.0.1:6379/0]' -r
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from shuffle" -l redis-password-file -d 'A file holding the password for every Redis URL that has none (the URL\'s user, or the default user): no password in `ps`. A final newline is not part of it. [default: $REDISCLI_AUTH, as redis-cli reads it]' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from shuffle" -l tls-ca-cert -d 'PEM file of the CA that signed the server\'s certificate (rediss:// only; default: the system trust store)' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from shuffle" -l connect-timeout -d 'Give up connecting to Redis after this long (e.g. 500ms, 2s)' -r
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from shuffle" -l response-timeout -d 'Give up waiting for one Redis reply after this long' -r
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from shuffle" -l wait -d 'Wait until starts_at (Redis clock) instead of answering not_started'
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from shuffle" -l verify -d 'Re-run the shuffle from the revealed seed and compare every position with Redis\'s'
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from shuffle" -s q -l quiet -d 'Print nothing for people on success (for cron): no table, no warning, no log or retry line; errors, drift and refused outcomes still print, and so does the output of --format json, csv or prometheus. The exit code is the same either way'
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from shuffle" -s v -l verbose -d 'Say on stderr where each setting came from, then each Redis command sent (script name, first key, slot, node) with its latency: what the command does, without a packet capture. Never values or passwords'
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from shuffle" -l cluster -d 'Treat the URL (comma-separated URLs allowed) as seed nodes of a Redis Cluster'
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from shuffle" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from shuffle" -s V -l version -d 'Print version'
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from penalize" -l item -d 'The item' -r
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from penalize" -l user -d 'The user' -r
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from penalize" -l delay -d 'Admit the user this much later than its turn (e.g. 2s)' -r
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from penalize" -s c -l campaign -d 'Campaign file (YAML) to work on' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from penalize" -l format -d 'Output format: a table for people, JSON for scripts; csv (loadtest only), prometheus (status only) for monitoring' -r -f -a "table\t'Human-readable table'
json\t'One JSON document on stdout, for scripts'
csv\t'Comma-separated values (loadtest: redis-benchmark\'s columns first)'
prometheus\t'Prometheus text exposition format (`status` only: node_exporter\'s textfile collector)'"
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from penalize" -l tz -d 'Where the times in tables are: `file` (the offset the campaign file writes starts_at in, e.g. +08:00; UTC for a file without times), `utc`, or an offset like +08:00. JSON is always UTC' -r
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from penalize" -l redis -d 'Redis URL: redis://[user:pass@]host:port/db, rediss:// for TLS. Overrides the campaign file\'s `redis:`. [default: redis://127.0.0.1:6379/0]' -r
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from penalize" -l redis-password-file -d 'A file holding the password for every Redis URL that has none (the URL\'s user, or the default user): no password in `ps`. A final newline is not part of it. [default: $REDISCLI_AUTH, as redis-cli reads it]' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from penalize" -l tls-ca-cert -d 'PEM file of the CA that signed the server\'s certificate (rediss:// only; default: the system trust store)' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from penalize" -l connect-timeout -d 'Give up connecting to Redis after this long (e.g. 500ms, 2s)' -r
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from penalize" -l response-timeout -d 'Give up waiting for one Redis reply after this long' -r
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from penalize" -l block -d 'Never admit the user (an admission already granted is taken back); the user still sees `not_admitted`, like anyone at the tail'
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from penalize" -l clear -d 'Take the user off the risk list'
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from penalize" -s q -l quiet -d 'Print nothing for people on success (for cron): no table, no warning, no log or retry line; errors, drift and refused outcomes still print, and so does the output of --format json, csv or prometheus. The exit code is the same either way'
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from penalize" -s v -l verbose -d 'Say on stderr where each setting came from, then each Redis command sent (script name, first key, slot, node) with its latency: what the command does, without a packet capture. Never values or passwords'
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from penalize" -l cluster -d 'Treat the URL (comma-separated URLs allowed) as seed nodes of a Redis Cluster'
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from penalize" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from penalize" -s V -l version -d 'Print version'
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from help" -f -a "join" -d 'Join the item\'s room (a repeat join returns the same position); exit code: the first refused join\'s outcome'
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from help" -f -a "position" -d 'Where users stand: position, serving position, wait; exit code: the first user\'s refusal a buy would get'
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from help" -f -a "status" -d 'The room of each item: joined, admitted, active, rate, pauses, the wait at the tail, the pre-queue and its seed'
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from help" -f -a "pause" -d 'Pause the room: nobody not admitted yet is admitted until the resume (rate mode: the clock stops). The kill switch pauses it too'
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from help" -f -a "resume" -d 'Resume a room you paused (one the kill switch holds resumes with `shutdown-switch off`)'
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from help" -f -a "admit" -d 'What a room needs beside the sale: max_active\'s admitter, the pre-queue\'s shuffle at the start, a bucketed item\'s fan-out; once, or --loop (a service: it waits out Redis stalls, and each pass leaves a heartbeat the buy and preheat read)'
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from help" -f -a "shuffle" -d 'Shuffle the pre-queue once starts_at has passed (Redis clock), or --verify a shuffle from its revealed seed'
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from help" -f -a "penalize" -d 'The risk list: delay a user\'s admission, block a user for good, or clear the entry'
complete -c seckill -n "__fish_seckill_using_subcommand queue; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c seckill -n "__fish_seckill_using_subcommand register" -l user -d 'The user to register (repeat the flag to register several on the same device, e.g. a household\'s or a batch the shop imports)' -r
complete -c seckill -n "__fish_seckill_using_subcommand register" -l device -d 'The device the user registers from (an id the shop\'s app knows it by; no spaces)' -r
complete -c seckill -n "__fish_seckill_using_subcommand register" -l ip -d 'The caller\'s IP address (IPv4 or IPv6); counted under its /24 or /64. Required when a room caps accounts per IP (per_ip)' -r
complete -c seckill -n "__fish_seckill_using_subcommand register" -l item -d 'Only this item (default: every item whose waiting room takes registrations)' -r
complete -c seckill -n "__fish_seckill_using_subcommand register" -s c -l campaign -d 'Campaign file (YAML) to work on' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand register" -l format -d 'Output format: a table for people, JSON for scripts; csv (loadtest only), prometheus (status only) for monitoring' -r -f -a "table\t'Human-readable table'
json\t'One JSON document on stdout, for scripts'
csv\t'Comma-separated values (loadtest: redis-benchmark\'s columns first)'
prometheus\t'Prometheus text exposition format (`status` only: node_exporter\'s textfile collector)'"
complete -c seckill -n "__fish_seckill_using_subcommand register" -l tz -d 'Where the times in tables are: `file` (the offset the campaign file writes starts_at in, e.g. +08:00; UTC for a file without times), `utc`, or an offset like +08:00. JSON is always UTC' -r
complete -c seckill -n "__fish_seckill_using_subcommand register" -l redis -d 'Redis URL: redis://[user:pass@]host:port/db, rediss:// for TLS. Overrides the campaign file\'s `redis:`. [default: redis://127.0.0.1:6379/0]' -r
complete -c seckill -n "__fish_seckill_using_subcommand register" -l redis-password-file -d 'A file holding the password for every Redis URL that has none (the URL\'s user, or the default user): no password in `ps`. A final newline is not part of it. [default: $REDISCLI_AUTH, as redis-cli reads it]' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand register" -l tls-ca-cert -d 'PEM file of the CA that signed the server\'s certificate (rediss:// only; default: the system trust store)' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand register" -l connect-timeout -d 'Give up connecting to Redis after this long (e.g. 500ms, 2s)' -r
complete -c seckill -n "__fish_seckill_using_subcommand register" -l response-timeout -d 'Give up waiting for one Redis reply after this long' -r
complete -c seckill -n "__fish_seckill_using_subcommand register" -s q -l quiet -d 'Print nothing for people on success (for cron): no table, no warning, no log or retry line; errors, drift and refused outcomes still print, and so does the output of --format json, csv or prometheus. The exit code is the same either way'
complete -c seckill -n "__fish_seckill_using_subcommand register" -s v -l verbose -d 'Say on stderr where each setting came from, then each Redis command sent (script name, first key, slot, node) with its latency: what the command does, without a packet capture. Never values or passwords'
complete -c seckill -n "__fish_seckill_using_subcommand register" -l cluster -d 'Treat the URL (comma-separated URLs allowed) as seed nodes of a Redis Cluster'
complete -c seckill -n "__fish_seckill_using_subcommand register" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c seckill -n "__fish_seckill_using_subcommand register" -s V -l version -d 'Print version'
complete -c seckill -n "__fish_seckill_using_subcommand rebalance" -l item -d 'Only this item (default: every bucketed item of the campaign)' -r
complete -c seckill -n "__fish_seckill_using_subcommand rebalance" -l interval -d 'Pause between passes with --watch (at least 100ms)' -r
complete -c seckill -n "__fish_seckill_using_subcommand rebalance" -l metrics-listen -d 'With --watch: serve http://ADDR/metrics and /healthz (200 while Redis answers); :PORT for every interface, or HOST:PORT' -r
complete -c seckill -n "__fish_seckill_using_subcommand rebalance" -l low-water -d 'A bucket holding less than this fraction of the mean is refilled up to the mean' -r
complete -c seckill -n "__fish_seckill_using_subcommand rebalance" -s c -l campaign -d 'Campaign file (YAML) to work on' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand rebalance" -l format -d 'Output format: a table for people, JSON for scripts; csv (loadtest only), prometheus (status only) for monitoring' -r -f -a "table\t'Human-readable table'
json\t'One JSON document on stdout, for scripts'
csv\t'Comma-separated values (loadtest: redis-benchmark\'s columns first)'
prometheus\t'Prometheus text exposition format (`status` only: node_exporter\'s textfile collector)'"
complete -c seckill -n "__fish_seckill_using_subcommand rebalance" -l tz -d 'Where the times in tables are: `file` (the offset the campaign file writes starts_at in, e.g. +08:00; UTC for a file without times), `utc`, or an offset like +08:00. JSON is always UTC' -r
complete -c seckill -n "__fish_seckill_using_subcommand rebalance" -l redis -d 'Redis URL: redis://[user:pass@]host:port/db, rediss:// for TLS. Overrides the campaign file\'s `redis:`. [default: redis://127.0.0.1:6379/0]' -r
complete -c seckill -n "__fish_seckill_using_subcommand rebalance" -l redis-password-file -d 'A file holding the password for every Redis URL that has none (the URL\'s user, or the default user): no password in `ps`. A final newline is not part of it. [default: $REDISCLI_AUTH, as redis-cli reads it]' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand rebalance" -l tls-ca-cert -d 'PEM file of the CA that signed the server\'s certificate (rediss:// only; default: the system trust store)' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand rebalance" -l connect-timeout -d 'Give up connecting to Redis after this long (e.g. 500ms, 2s)' -r
complete -c seckill -n "__fish_seckill_using_subcommand rebalance" -l response-timeout -d 'Give up waiting for one Redis reply after this long' -r
complete -c seckill -n "__fish_seckill_using_subcommand rebalance" -l watch -d 'Keep going, one pass per interval, until SIGINT/SIGTERM'
complete -c seckill -n "__fish_seckill_using_subcommand rebalance" -s q -l quiet -d 'Print nothing for people on success (for cron): no table, no warning, no log or retry line; errors, drift and refused outcomes still print, and so does the output of --format json, csv or prometheus. The exit code is the same either way'
complete -c seckill -n "__fish_seckill_using_subcommand rebalance" -s v -l verbose -d 'Say on stderr where each setting came from, then each Redis command sent (script name, first key, slot, node) with its latency: what the command does, without a packet capture. Never values or passwords'
complete -c seckill -n "__fish_seckill_using_subcommand rebalance" -l cluster -d 'Treat the URL (comma-separated URLs allowed) as seed nodes of a Redis Cluster'
complete -c seckill -n "__fish_seckill_using_subcommand rebalance" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c seckill -n "__fish_seckill_using_subcommand rebalance" -s V -l version -d 'Print version'
complete -c seckill -n "__fish_seckill_using_subcommand acl" -l role -d 'The job the user is for: buyer (the web tier\'s `buy`), consumer (`consume`, `pending-claim`), operator (everything else), or all three' -r -f -a "buyer\t''
consumer\t''
operator\t''
all\t''"
complete -c seckill -n "__fish_seckill_using_subcommand acl" -l user -d 'The user\'s name (one role only; default seckill-ROLE). On a Redis shared by several campaigns, give each campaign\'s users their own names: the line replaces the user' -r
complete -c seckill -n "__fish_seckill_using_subcommand acl" -l password-file -d 'Read the password from FILE (one role only; a final newline is not part of it): the line then sets its SHA-256 (`#<hex>`) and never shows it. Without: a `>PASSWORD` placeholder to replace' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand acl" -s c -l campaign -d 'Campaign file (YAML) to work on' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand acl" -l format -d 'Output format: a table for people, JSON for scripts; csv (loadtest only), prometheus (status only) for monitoring' -r -f -a "table\t'Human-readable table'
json\t'One JSON document on stdout, for scripts'
csv\t'Comma-separated values (loadtest: redis-benchmark\'s columns first)'
prometheus\t'Prometheus text exposition format (`status` only: node_exporter\'s textfile collector)'"
complete -c seckill -n "__fish_seckill_using_subcommand acl" -l tz -d 'Where the times in tables are: `file` (the offset the campaign file writes starts_at in, e.g. +08:00; UTC for a file without times), `utc`, or an offset like +08:00. JSON is always UTC' -r
complete -c seckill -n "__fish_seckill_using_subcommand acl" -l redis -d 'Redis URL: redis://[user:pass@]host:port/db, rediss:// for TLS. Overrides the campaign file\'s `redis:`. [default: redis://127.0.0.1:6379/0]' -r
complete -c seckill -n "__fish_seckill_using_subcommand acl" -l redis-password-file -d 'A file holding the password for every Redis URL that has none (the URL\'s user, or the default user): no password in `ps`. A final newline is not part of it. [default: $REDISCLI_AUTH, as redis-cli reads it]' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand acl" -l tls-ca-cert -d 'PEM file of the CA that signed the server\'s certificate (rediss:// only; default: the system trust store)' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand acl" -l connect-timeout -d 'Give up connecting to Redis after this long (e.g. 500ms, 2s)' -r
complete -c seckill -n "__fish_seckill_using_subcommand acl" -l response-timeout -d 'Give up waiting for one Redis reply after this long' -r
complete -c seckill -n "__fish_seckill_using_subcommand acl" -l apply -d 'Write the user to the Redis given by --redis (connect as an admin user there), then prove with ACL DRYRUN that it can send every command of its role\'s whole path (connecting, on a cluster node the slot map; the commands its subcommands send outside scripts; each script and every command inside it) and run no other role\'s writing script (exit 7 when a check fails). Needs --password-file; one node at a time'
complete -c seckill -n "__fish_seckill_using_subcommand acl" -s q -l quiet -d 'Print nothing for people on success (for cron): no table, no warning, no log or retry line; errors, drift and refused outcomes still print, and so does the output of --format json, csv or prometheus. The exit code is the same either way'
complete -c seckill -n "__fish_seckill_using_subcommand acl" -s v -l verbose -d 'Say on stderr where each setting came from, then each Redis command sent (script name, first key, slot, node) with its latency: what the command does, without a packet capture. Never values or passwords'
complete -c seckill -n "__fish_seckill_using_subcommand acl" -l cluster -d 'Treat the URL (comma-separated URLs allowed) as seed nodes of a Redis Cluster'
complete -c seckill -n "__fish_seckill_using_subcommand acl" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c seckill -n "__fish_seckill_using_subcommand acl" -s V -l version -d 'Print version'
complete -c seckill -n "__fish_seckill_using_subcommand loadtest" -l variant -d 'Which design to run (several: `v1,v3`); `all` runs each in turn on a fresh state and prints one table; `queue` rehearses the item\'s waiting room (docs/waiting-room.md)' -r -f -a "v1\t'GET, compare in the client, DECR: not atomic, oversells'
v2\t'WATCH / GET / MULTI / DECR / EXEC, retried on abort'
v3\t'A minimal Lua script: check stock, DECR'
v4\t'DECR, INCR back when the result is negative'
full\t'The toolkit\'s real buy script (rate limit, dedupe, stock, order stream)'
lock\t'GET/DECR under a per-item lock (SET NX PX, compare-and-delete release)'
all\t'Every variant in turn, one comparison table'
queue\t'The item\'s waiting room: arrivals at --rate, admissions, buys; fairness and waits'"
complete -c seckill -n "__fish_seckill_using_subcommand loadtest" -l item -d 'Item whose settings to use (default: the campaign\'s first item)' -r
complete -c seckill -n "__fish_seckill_using_subcommand loadtest" -l connections -d 'Connections to Redis, over all worker threads (redis-benchmark\'s -c); with --buckets, the bucket run\'s threads, one connection each' -r
complete -c seckill -n "__fish_seckill_using_subcommand loadtest" -l threads -d 'Worker threads. On a plain-TCP standalone Redis each runs an event loop over its share of the connections [default: half the cores, at least 1, leaving the rest to a Redis on the same machine]; on TLS and Cluster targets each connection has its own thread and this is ignored' -r
complete -c seckill -n "__fish_seckill_using_subcommand loadtest" -l requests -d 'Attempts per variant (closed loop: spread over the connections; open loop: sent at --rate)' -r
complete -c seckill -n "__fish_seckill_using_subcommand loadtest" -l rate -d 'Open loop: attempts per second over all connections, sent on schedule whatever Redis does; latency is measured from the planned send time. With `--variant queue`: the shoppers\' arrival rate at the room (default: twice its admission rate, so a queue forms)' -r
complete -c seckill -n "__fish_seckill_using_subcommand loadtest" -l duration -d 'Open loop: run for this long at --rate (instead of --requests), e.g. 30s' -r
complete -c seckill -n "__fish_seckill_using_subcommand loadtest" -l users -d 'Distinct synthetic shoppers; request n is user `u<n mod users>` (default: = --requests, so stock, not the per-user limit, runs out). With `--variant queue`: the number of arrivals, each joining once and buying once admitted (default: --rate × --duration)' -r
complete -c seckill -n "__fish_seckill_using_subcommand loadtest" -l stock -d 'Units in stock at the start of each variant (the campaign file\'s stock is not used)' -r
complete -c seckill -n "__fish_seckill_using_subcommand loadtest" -l pipeline -d 'Script calls per round trip per connection (v3 and full only; the others are multi-step by design and always send one request at a time)' -r
complete -c seckill -n "__fish_seckill_using_subcommand loadtest" -l wait-replicas -d '`full` only: after every buy, WAIT on the same connection until N replicas confirmed it; a buy fewer confirmed within --wait-timeout counts as `unreplicated` (sold all the same). Costs one more command per buy' -r
complete -c seckill -n "__fish_seckill_using_subcommand loadtest" -l wait-timeout -d 'Longest WAIT for --wait-replicas (shorter than --response-timeout)' -r
complete -c seckill -n "__fish_seckill_using_subcommand loadtest" -l hdr-out -d 'Write one HdrHistogram percentile-distribution file per variant, PREFIX<variant>.hgrm (corrected latency; in open loop also PREFIX<variant>.service.hgrm), for HdrHistogram\'s plotter' -r
complete -c seckill -n "__fish_seckill_using_subcommand loadtest" -l max-p99 -d 'Fail (exit 4) when a variant\'s p99 latency (corrected) exceeds this, e.g. 5ms' -r
complete -c seckill -n "__fish_seckill_using_subcommand loadtest" -l min-qps -d 'Fail (exit 4) when a variant answers fewer attempts per second than this' -r
complete -c seckill -n "__fish_seckill_using_subcommand loadtest" -l buckets -d 'Split the stock into N buckets (docs/buckets.md) and run the bucket buy path (`--variant full` or `queue` only); reports round trips per buy, the transfer share and per-bucket figures' -r
complete -c seckill -n "__fish_seckill_using_subcommand loadtest" -l hot-buckets -d 'With --buckets: skewed demand, every synthetic user\'s home is one of the first K buckets (default: uniform)' -r
complete -c seckill -n "__fish_seckill_using_subcommand loadtest" -l payment-timeout -d '--reservations: the payment timeout of every reservation (each of --connections is a thread with its own connection; closed loop only)' -r
complete -c seckill -n "__fish_seckill_using_subcommand loadtest" -l pay-share -d '--reservations: share of the reservations paid (0..=1), half of them at the deadline' -r
complete -c seckill -n "__fish_seckill_using_subcommand loadtest" -l target -d 'Drive a running `seckill serve` over HTTP instead of Redis directly: the same attempts, through the shop\'s front door (closed or open loop, --connections keep-alive connections); an item with a waiting room is joined, polled and bought once admitted. It buys the target\'s real stock for synthetic users (`loadtest-<run>-u…`): only with --rehearsal' -r
complete -c seckill -n "__fish_seckill_using_subcommand loadtest" -l print-command -d 'Print the EVALSHA command line the v3 or full variant sends per request (for redis-benchmark; `__rand_int__` marks the per-request numbers) and exit' -r -f -a "v1\t'GET, compare in the client, DECR: not atomic, oversells'
v2\t'WATCH / GET / MULTI / DECR / EXEC, retried on abort'
v3\t'A minimal Lua script: check stock, DECR'
v4\t'DECR, INCR back when the result is negative'
full\t'The toolkit\'s real buy script (rate limit, dedupe, stock, order stream)'
lock\t'GET/DECR under a per-item lock (SET NX PX, compare-and-delete release)'"
complete -c seckill -n "__fish_seckill_using_subcommand loadtest" -s c -l campaign -d 'Campaign file (YAML) to work on' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand loadtest" -l format -d 'Output format: a table for people, JSON for scripts; csv (loadtest only), prometheus (status only) for monitoring' -r -f -a "table\t'Human-readable table'
json\t'One JSON document on stdout, for scripts'
csv\t'Comma-separated values (loadtest: redis-benchmark\'s columns first)'
prometheus\t'Prometheus text exposition format (`status` only: node_exporter\'s textfile collector)'"
complete -c seckill -n "__fish_seckill_using_subcommand loadtest" -l tz -d 'Where the times in tables are: `file` (the offset the campaign file writes starts_at in, e.g. +08:00; UTC for a file without times), `utc`, or an offset like +08:00. JSON is always UTC' -r
complete -c seckill -n "__fish_seckill_using_subcommand loadtest" -l redis -d 'Redis URL: redis://[user:pass@]host:port/db, rediss:// for TLS. Overrides the campaign file\'s `redis:`. [default: redis://127.0.0.1:6379/0]' -r
complete -c seckill -n "__fish_seckill_using_subcommand loadtest" -l redis-password-file -d 'A file holding the password for every Redis URL that has none (the URL\'s user, or the default user): no password in `ps`. A final newline is not part of it. [default: $REDISCLI_AUTH, as redis-cli reads it]' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand loadtest" -l tls-ca-cert -d 'PEM file of the CA that signed the server\'s certificate (rediss:// only; default: the system trust store)' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand loadtest" -l connect-timeout -d 'Give up connecting to Redis after this long (e.g. 500ms, 2s)' -r
complete -c seckill -n "__fish_seckill_using_subcommand loadtest" -l response-timeout -d 'Give up waiting for one Redis reply after this long' -r
complete -c seckill -n "__fish_seckill_using_subcommand loadtest" -l rate-limit -d 'Keep the campaign\'s rate limit in the `full` variant (default: off, so synthetic shoppers measure the stock path, not the throttle)'
complete -c seckill -n "__fish_seckill_using_subcommand loadtest" -l keep -d 'Leave the load-test keys in Redis afterwards (the last variant\'s state), for inspection'
complete -c seckill -n "__fish_seckill_using_subcommand loadtest" -l wide -d 'Show every column (default: variant, qps, succeeded, oversold, p99, verdict)'
complete -c seckill -n "__fish_seckill_using_subcommand loadtest" -l fail-on-oversell -d 'Fail (exit 4) on any oversold unit, v1\'s too. Oversold, undersold or stock drift in any other variant always fails'
complete -c seckill -n "__fish_seckill_using_subcommand loadtest" -l reservations -d 'Instead of the variants: buys with a payment timeout, then payments racing expiry (--pay-share of the reservations paid, half of them right at the deadline) while two expirers run; reports the final states and whether initial = left + reserved + paid holds'
complete -c seckill -n "__fish_seckill_using_subcommand loadtest" -l rehearsal -d 'With --target: the target sells a rehearsal\'s stock, which this run may buy (a production sale\'s buyers would lose those units)'
complete -c seckill -n "__fish_seckill_using_subcommand loadtest" -s q -l quiet -d 'Print nothing for people on success (for cron): no table, no warning, no log or retry line; errors, drift and refused outcomes still print, and so does the output of --format json, csv or prometheus. The exit code is the same either way'
complete -c seckill -n "__fish_seckill_using_subcommand loadtest" -s v -l verbose -d 'Say on stderr where each setting came from, then each Redis command sent (script name, first key, slot, node) with its latency: what the command does, without a packet capture. Never values or passwords'
complete -c seckill -n "__fish_seckill_using_subcommand loadtest" -l cluster -d 'Treat the URL (comma-separated URLs allowed) as seed nodes of a Redis Cluster'
complete -c seckill -n "__fish_seckill_using_subcommand loadtest" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c seckill -n "__fish_seckill_using_subcommand loadtest" -s V -l version -d 'Print version'
complete -c seckill -n "__fish_seckill_using_subcommand scripts; and not __fish_seen_subcommand_from list show help" -s c -l campaign -d 'Campaign file (YAML) to work on' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand scripts; and not __fish_seen_subcommand_from list show help" -l format -d 'Output format: a table for people, JSON for scripts; csv (loadtest only), prometheus (status only) for monitoring' -r -f -a "table\t'Human-readable table'
json\t'One JSON document on stdout, for scripts'
csv\t'Comma-separated values (loadtest: redis-benchmark\'s columns first)'
prometheus\t'Prometheus text exposition format (`status` only: node_exporter\'s textfile collector)'"
complete -c seckill -n "__fish_seckill_using_subcommand scripts; and not __fish_seen_subcommand_from list show help" -l tz -d 'Where the times in tables are: `file` (the offset the campaign file writes starts_at in, e.g. +08:00; UTC for a file without times), `utc`, or an offset like +08:00. JSON is always UTC' -r
complete -c seckill -n "__fish_seckill_using_subcommand scripts; and not __fish_seen_subcommand_from list show help" -l redis -d 'Redis URL: redis://[user:pass@]host:port/db, rediss:// for TLS. Overrides the campaign file\'s `redis:`. [default: redis://127.0.0.1:6379/0]' -r
complete -c seckill -n "__fish_seckill_using_subcommand scripts; and not __fish_seen_subcommand_from list show help" -l redis-password-file -d 'A file holding the password for every Redis URL that has none (the URL\'s user, or the default user): no password in `ps`. A final newline is not part of it. [default: $REDISCLI_AUTH, as redis-cli reads it]' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand scripts; and not __fish_seen_subcommand_from list show help" -l tls-ca-cert -d 'PEM file of the CA that signed the server\'s certificate (rediss:// only; default: the system trust store)' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand scripts; and not __fish_seen_subcommand_from list show help" -l connect-timeout -d 'Give up connecting to Redis after this long (e.g. 500ms, 2s)' -r
complete -c seckill -n "__fish_seckill_using_subcommand scripts; and not __fish_seen_subcommand_from list show help" -l response-timeout -d 'Give up waiting for one Redis reply after this long' -r
complete -c seckill -n "__fish_seckill_using_subcommand scripts; and not __fish_seen_subcommand_from list show help" -s q -l quiet -d 'Print nothing for people on success (for cron): no table, no warning, no log or retry line; errors, drift and refused outcomes still print, and so does the output of --format json, csv or prometheus. The exit code is the same either way'
complete -c seckill -n "__fish_seckill_using_subcommand scripts; and not __fish_seen_subcommand_from list show help" -s v -l verbose -d 'Say on stderr where each setting came from, then each Redis command sent (script name, first key, slot, node) with its latency: what the command does, without a packet capture. Never values or passwords'
complete -c seckill -n "__fish_seckill_using_subcommand scripts; and not __fish_seen_subcommand_from list show help" -l cluster -d 'Treat the URL (comma-separated URLs allowed) as seed nodes of a Redis Cluster'
complete -c seckill -n "__fish_seckill_using_subcommand scripts; and not __fish_seen_subcommand_from list show help" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c seckill -n "__fish_seckill_using_subcommand scripts; and not __fish_seen_subcommand_from list show help" -s V -l version -d 'Print version'
complete -c seckill -n "__fish_seckill_using_subcommand scripts; and not __fish_seen_subcommand_from list show help" -f -a "list" -d 'Every script: how many KEYS and ARGV it takes, its lines as Redis runs it, its SHA1'
complete -c seckill -n "__fish_seckill_using_subcommand scripts; and not __fish_seen_subcommand_from list show help" -f -a "show" -d 'One script as Redis runs it, its library helpers pasted in (without NAME: the list)'
complete -c seckill -n "__fish_seckill_using_subcommand scripts; and not __fish_seen_subcommand_from list show help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c seckill -n "__fish_seckill_using_subcommand scripts; and __fish_seen_subcommand_from list" -s c -l campaign -d 'Campaign file (YAML) to work on' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand scripts; and __fish_seen_subcommand_from list" -l format -d 'Output format: a table for people, JSON for scripts; csv (loadtest only), prometheus (status only) for monitoring' -r -f -a "table\t'Human-readable table'
json\t'One JSON document on stdout, for scripts'
csv\t'Comma-separated values (loadtest: redis-benchmark\'s columns first)'
prometheus\t'Prometheus text exposition format (`status` only: node_exporter\'s textfile collector)'"
complete -c seckill -n "__fish_seckill_using_subcommand scripts; and __fish_seen_subcommand_from list" -l tz -d 'Where the times in tables are: `file` (the offset the campaign file writes starts_at in, e.g. +08:00; UTC for a file without times), `utc`, or an offset like +08:00. JSON is always UTC' -r
complete -c seckill -n "__fish_seckill_using_subcommand scripts; and __fish_seen_subcommand_from list" -l redis -d 'Redis URL: redis://[user:pass@]host:port/db, rediss:// for TLS. Overrides the campaign file\'s `redis:`. [default: redis://127.0.0.1:6379/0]' -r
complete -c seckill -n "__fish_seckill_using_subcommand scripts; and __fish_seen_subcommand_from list" -l redis-password-file -d 'A file holding the password for every Redis URL that has none (the URL\'s user, or the default user): no password in `ps`. A final newline is not part of it. [default: $REDISCLI_AUTH, as redis-cli reads it]' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand scripts; and __fish_seen_subcommand_from list" -l tls-ca-cert -d 'PEM file of the CA that signed the server\'s certificate (rediss:// only; default: the system trust store)' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand scripts; and __fish_seen_subcommand_from list" -l connect-timeout -d 'Give up connecting to Redis after this long (e.g. 500ms, 2s)' -r
complete -c seckill -n "__fish_seckill_using_subcommand scripts; and __fish_seen_subcommand_from list" -l response-timeout -d 'Give up waiting for one Redis reply after this long' -r
complete -c seckill -n "__fish_seckill_using_subcommand scripts; and __fish_seen_subcommand_from list" -s q -l quiet -d 'Print nothing for people on success (for cron): no table, no warning, no log or retry line; errors, drift and refused outcomes still print, and so does the output of --format json, csv or prometheus. The exit code is the same either way'
complete -c seckill -n "__fish_seckill_using_subcommand scripts; and __fish_seen_subcommand_from list" -s v -l verbose -d 'Say on stderr where each setting came from, then each Redis command sent (script name, first key, slot, node) with its latency: what the command does, without a packet capture. Never values or passwords'
complete -c seckill -n "__fish_seckill_using_subcommand scripts; and __fish_seen_subcommand_from list" -l cluster -d 'Treat the URL (comma-separated URLs allowed) as seed nodes of a Redis Cluster'
complete -c seckill -n "__fish_seckill_using_subcommand scripts; and __fish_seen_subcommand_from list" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c seckill -n "__fish_seckill_using_subcommand scripts; and __fish_seen_subcommand_from list" -s V -l version -d 'Print version'
complete -c seckill -n "__fish_seckill_using_subcommand scripts; and __fish_seen_subcommand_from show" -s c -l campaign -d 'Campaign file (YAML) to work on' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand scripts; and __fish_seen_subcommand_from show" -l format -d 'Output format: a table for people, JSON for scripts; csv (loadtest only), prometheus (status only) for monitoring' -r -f -a "table\t'Human-readable table'
json\t'One JSON document on stdout, for scripts'
csv\t'Comma-separated values (loadtest: redis-benchmark\'s columns first)'
prometheus\t'Prometheus text exposition format (`status` only: node_exporter\'s textfile collector)'"
complete -c seckill -n "__fish_seckill_using_subcommand scripts; and __fish_seen_subcommand_from show" -l tz -d 'Where the times in tables are: `file` (the offset the campaign file writes starts_at in, e.g. +08:00; UTC for a file without times), `utc`, or an offset like +08:00. JSON is always UTC' -r
complete -c seckill -n "__fish_seckill_using_subcommand scripts; and __fish_seen_subcommand_from show" -l redis -d 'Redis URL: redis://[user:pass@]host:port/db, rediss:// for TLS. Overrides the campaign file\'s `redis:`. [default: redis://127.0.0.1:6379/0]' -r
complete -c seckill -n "__fish_seckill_using_subcommand scripts; and __fish_seen_subcommand_from show" -l redis-password-file -d 'A file holding the password for every Redis URL that has none (the URL\'s user, or the default user): no password in `ps`. A final newline is not part of it. [default: $REDISCLI_AUTH, as redis-cli reads it]' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand scripts; and __fish_seen_subcommand_from show" -l tls-ca-cert -d 'PEM file of the CA that signed the server\'s certificate (rediss:// only; default: the system trust store)' -r -F
complete -c seckill -n "__fish_seckill_using_subcommand scripts; and __fish_seen_subcommand_from show" -l connect-timeout -d 'Give up connecting to Redis after this long (e.g. 500ms, 2s)' -r
complete -c seckill -n "__fish_seckill_using_subcommand scripts; and __fish_seen_subcommand_from show" -l response-timeout -d 'Give up waiting for one Redis reply after this long' -r
complete -c seckill -n "__fish_seckill_using_subcommand scripts; and __fish_seen_subcommand_from show" -s q -l quiet -d 'Print nothing for people on success (for cron): no table, no warning, no log or retry line; errors, drift and refused outcomes still print, and so does the output of --format json, csv or prometheus. The exit code is the same either way'
complete -c seckill -n "__fish_seckill_using_subcommand scripts; and __fish_seen_subcommand_from show" -s v -l verbose -d 'Say on stderr where each setting came from, then each Redis command sent (script name, first key, slot, node) with its latency: what the command does, without a packet capture. Never values or passwords'
complete -c seckill -n "__fish_seckill_using_subcommand scripts; and __fish_seen_subcommand_from show" -l cluster -d 'Treat the URL (comma-separated URLs allowed) as seed nodes of a Redis Cluster'
complete -c seckill -n "__fish_seckill_using_subcommand scripts; and __fish_seen_subcommand_from show" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c seckill -n "__fish_seckill_using_subcommand scripts; and __fish_seen_subcommand_from show" -s V -l version -d 'Print version'
complete -c seckill -n "__fish_seckill_using_subcommand scripts; and __fish_seen_subcommand_from help" -f -a "list" -d 'Every script: how many KEYS and ARGV it takes, its lines as Redis runs it, its SHA1'
complete -c seckill -n "__fish_seckill_using_subcommand scripts; and __fish_seen_subcommand_from help" -f -a "show" -d 'One script as Redis runs it, its library helpers pasted in (without NAME: the list)'
complete -c seckill -n "__fish_seckill_using_subcommand scripts; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c seckill -n "__fish_seckill_using_subcommand help; and not __fish_seen_subcommand_from init preheat buy shutdown-switch completions man consume pending-claim dead-letter reconcile pay cancel expire status doctor campaigns serve queue register rebalance acl loadtest scripts help" -f -a "init" -d 'Reset a campaign\'s Redis state to the file\'s values (rehearsals, load tests)'
complete -c seckill -n "__fish_seckill_using_subcommand help; and not __fish_seen_subcommand_from init preheat buy shutdown-switch completions man consume pending-claim dead-letter reconcile pay cancel expire status doctor campaigns serve queue register rebalance acl loadtest scripts help" -f -a "preheat" -d 'Load stock, item data and the sale window into Redis before launch; never clobbers a live sale'
complete -c seckill -n "__fish_seckill_using_subcommand help; and not __fish_seen_subcommand_from init preheat buy shutdown-switch completions man consume pending-claim dead-letter reconcile pay cancel expire status doctor campaigns serve queue register rebalance acl loadtest scripts help" -f -a "buy" -d 'One purchase attempt through the buy script; the exit code tells the outcome'
complete -c seckill -n "__fish_seckill_using_subcommand help; and not __fish_seen_subcommand_from init preheat buy shutdown-switch completions man consume pending-claim dead-letter reconcile pay cancel expire status doctor campaigns serve queue register rebalance acl loadtest scripts help" -f -a "shutdown-switch" -d 'The kill switch: `on` refuses every buy from the next call, `off` reopens, `status` shows'
complete -c seckill -n "__fish_seckill_using_subcommand help; and not __fish_seen_subcommand_from init preheat buy shutdown-switch completions man consume pending-claim dead-letter reconcile pay cancel expire status doctor campaigns serve queue register rebalance acl loadtest scripts help" -f -a "completions" -d 'Print a shell completion script (bash, zsh, fish, ...)'
complete -c seckill -n "__fish_seckill_using_subcommand help; and not __fish_seen_subcommand_from init preheat buy shutdown-switch completions man consume pending-claim dead-letter reconcile pay cancel expire status doctor campaigns serve queue register rebalance acl loadtest scripts help" -f -a "man" -d 'Print the manual page (roff), or write every page with --out DIR'
complete -c seckill -n "__fish_seckill_using_subcommand help; and not __fish_seen_subcommand_from init preheat buy shutdown-switch completions man consume pending-claim dead-letter reconcile pay cancel expire status doctor campaigns serve queue register rebalance acl loadtest scripts help" -f -a "consume" -d 'Carry orders from the item streams into the order database: commit, then ack'
complete -c seckill -n "__fish_seckill_using_subcommand help; and not __fish_seen_subcommand_from init preheat buy shutdown-switch completions man consume pending-claim dead-letter reconcile pay cancel expire status doctor campaigns serve queue register rebalance acl loadtest scripts help" -f -a "pending-claim" -d 'Recover idle pending orders (store them, or dead-letter the ones that cannot be stored)'
complete -c seckill -n "__fish_seckill_using_subcommand help; and not __fish_seen_subcommand_from init preheat buy shutdown-switch completions man consume pending-claim dead-letter reconcile pay cancel expire status doctor campaigns serve queue register rebalance acl loadtest scripts help" -f -a "dead-letter" -d 'List dead-lettered entries with their reasons, or re-drive them into the order database'
complete -c seckill -n "__fish_seckill_using_subcommand help; and not __fish_seen_subcommand_from init preheat buy shutdown-switch completions man consume pending-claim dead-letter reconcile pay cancel expire status doctor campaigns serve queue register rebalance acl loadtest scripts help" -f -a "reconcile" -d 'Prove initial stock = database + in flight + dead-lettered + left; exit 0 balanced, 3 drift, 1 not checked'
complete -c seckill -n "__fish_seckill_using_subcommand help; and not __fish_seen_subcommand_from init preheat buy shutdown-switch completions man consume pending-claim dead-letter reconcile pay cancel expire status doctor campaigns serve queue register rebalance acl loadtest scripts help" -f -a "pay" -d 'Pay one reserved order (campaigns with payment_timeout); exit 0 paid, 30 already paid, 31 expired, 32 cancelled, 33 unknown'
complete -c seckill -n "__fish_seckill_using_subcommand help; and not __fish_seen_subcommand_from init preheat buy shutdown-switch completions man consume pending-claim dead-letter reconcile pay cancel expire status doctor campaigns serve queue register rebalance acl loadtest scripts help" -f -a "cancel" -d 'Cancel one reserved order: its units go back on sale; a paid order is never released'
complete -c seckill -n "__fish_seckill_using_subcommand help; and not __fish_seen_subcommand_from init preheat buy shutdown-switch completions man consume pending-claim dead-letter reconcile pay cancel expire status doctor campaigns serve queue register rebalance acl loadtest scripts help" -f -a "expire" -d 'Release every reservation past its payment deadline (Redis clock), once or in a loop'
complete -c seckill -n "__fish_seckill_using_subcommand help; and not __fish_seen_subcommand_from init preheat buy shutdown-switch completions man consume pending-claim dead-letter reconcile pay cancel expire status doctor campaigns serve queue register rebalance acl loadtest scripts help" -f -a "status" -d 'Live view of a sale per item: stock, rate, window, kill switch, consumer lag, key expiry (read only)'
complete -c seckill -n "__fish_seckill_using_subcommand help; and not __fish_seen_subcommand_from init preheat buy shutdown-switch completions man consume pending-claim dead-letter reconcile pay cancel expire status doctor campaigns serve queue register rebalance acl loadtest scripts help" -f -a "doctor" -d 'Go / no-go before launch: eviction, persistence, replicas, cluster, clocks, window, database, permissions'
complete -c seckill -n "__fish_seckill_using_subcommand help; and not __fish_seen_subcommand_from init preheat buy shutdown-switch completions man consume pending-claim dead-letter reconcile pay cancel expire status doctor campaigns serve queue register rebalance acl loadtest scripts help" -f -a "campaigns" -d 'The campaigns live on a Redis (recorded by preheat), to see which sale a command would touch'
complete -c seckill -n "__fish_seckill_using_subcommand help; and not __fish_seen_subcommand_from init preheat buy shutdown-switch completions man consume pending-claim dead-letter reconcile pay cancel expire status doctor campaigns serve queue register rebalance acl loadtest scripts help" -f -a "serve" -d 'The shop\'s front door: an HTTP buy API through the same scripts (docs/serve.md); runs until SIGTERM'
complete -c seckill -n "__fish_seckill_using_subcommand help; and not __fish_seen_subcommand_from init preheat buy shutdown-switch completions man consume pending-claim dead-letter reconcile pay cancel expire status doctor campaigns serve queue register rebalance acl loadtest scripts help" -f -a "queue" -d 'The waiting room in front of the buy script: join, position, status, pause/resume, admit, shuffle, penalize'
complete -c seckill -n "__fish_seckill_using_subcommand help; and not __fish_seen_subcommand_from init preheat buy shutdown-switch completions man consume pending-claim dead-letter reconcile pay cancel expire status doctor campaigns serve queue register rebalance acl loadtest scripts help" -f -a "register" -d 'Pre-register a user on a device for the waiting rooms that take registered users only (预约)'
complete -c seckill -n "__fish_seckill_using_subcommand help; and not __fish_seen_subcommand_from init preheat buy shutdown-switch completions man consume pending-claim dead-letter reconcile pay cancel expire status doctor campaigns serve queue register rebalance acl loadtest scripts help" -f -a "rebalance" -d 'Move stock of bucketed items from full buckets to draining ones (optional; see docs/buckets.md)'
complete -c seckill -n "__fish_seckill_using_subcommand help; and not __fish_seen_subcommand_from init preheat buy shutdown-switch completions man consume pending-claim dead-letter reconcile pay cancel expire status doctor campaigns serve queue register rebalance acl loadtest scripts help" -f -a "acl" -d 'The ACL SETUSER line of a buyer, consumer or operator user for this campaign; --apply writes and proves it'
complete -c seckill -n "__fish_seckill_using_subcommand help; and not __fish_seen_subcommand_from init preheat buy shutdown-switch completions man consume pending-claim dead-letter reconcile pay cancel expire status doctor campaigns serve queue register rebalance acl loadtest scripts help" -f -a "loadtest" -d 'Load-test stock-decrement designs (V1–V4, full buy script, lock) in a private namespace; never touches a sale'
complete -c seckill -n "__fish_seckill_using_subcommand help; and not __fish_seen_subcommand_from init preheat buy shutdown-switch completions man consume pending-claim dead-letter reconcile pay cancel expire status doctor campaigns serve queue register rebalance acl loadtest scripts help" -f -a "scripts" -d 'Print a Lua script as Redis runs it (its lua/lib/ helpers pasted in), or list them with their KEYS and ARGV'
complete -c seckill -n "__fish_seckill_using_subcommand help; and not __fish_seen_subcommand_from init preheat buy shutdown-switch completions man consume pending-claim dead-letter reconcile pay cancel expire status doctor campaigns serve queue register rebalance acl loadtest scripts help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c seckill -n "__fish_seckill_using_subcommand help; and __fish_seen_subcommand_from queue" -f -a "join" -d 'Join the item\'s room (a repeat join returns the same position); exit code: the first refused join\'s outcome'
complete -c seckill -n "__fish_seckill_using_subcommand help; and __fish_seen_subcommand_from queue" -f -a "position" -d 'Where users stand: position, serving position, wait; exit code: the first user\'s refusal a buy would get'
complete -c seckill -n "__fish_seckill_using_subcommand help; and __fish_seen_subcommand_from queue" -f -a "status" -d 'The room of each item: joined, admitted, active, rate, pauses, the wait at the tail, the pre-queue and its seed'
complete -c seckill -n "__fish_seckill_using_subcommand help; and __fish_seen_subcommand_from queue" -f -a "pause" -d 'Pause the room: nobody not admitted yet is admitted until the resume (rate mode: the clock stops). The kill switch pauses it too'
complete -c seckill -n "__fish_seckill_using_subcommand help; and __fish_seen_subcommand_from queue" -f -a "resume" -d 'Resume a room you paused (one the kill switch holds resumes with `shutdown-switch off`)'
complete -c seckill -n "__fish_seckill_using_subcommand help; and __fish_seen_subcommand_from queue" -f -a "admit" -d 'What a room needs beside the sale: max_active\'s admitter, the pre-queue\'s shuffle at the start, a bucketed item\'s fan-out; once, or --loop (a service: it waits out Redis stalls, and each pass leaves a heartbeat the buy and preheat read)'
complete -c seckill -n "__fish_seckill_using_subcommand help; and __fish_seen_subcommand_from queue" -f -a "shuffle" -d 'Shuffle the pre-queue once starts_at has passed (Redis clock), or --verify a shuffle from its revealed seed'
complete -c seckill -n "__fish_seckill_using_subcommand help; and __fish_seen_subcommand_from queue" -f -a "penalize" -d 'The risk list: delay a user\'s admission, block a user for good, or clear the entry'
complete -c seckill -n "__fish_seckill_using_subcommand help; and __fish_seen_subcommand_from scripts" -f -a "list" -d 'Every script: how many KEYS and ARGV it takes, its lines as Redis runs it, its SHA1'
complete -c seckill -n "__fish_seckill_using_subcommand help; and __fish_seen_subcommand_from scripts" -f -a "show" -d 'One script as Redis runs it, its library helpers pasted in (without NAME: the list)'
