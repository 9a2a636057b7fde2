//! The Lua scripts of `lua/`, one typed call per script.
//!
//! Each script has one Rust home here (`scripts::buy`, `scripts::preheat`,
//! ...) that owns its source, its KEYS/ARGV order and its reply parser: a
//! call type whose fields are the script's KEYS then ARGV, in the order the
//! script reads them, declared once through [`script_call!`]. The normal path
//! invokes it with `redis::Script` (EVALSHA, reloaded on NOSCRIPT on every
//! master of a cluster); the load-test packer (`loadtest::variants`) and
//! `loadtest --print-command` pack the very same fields into raw EVALSHA
//! commands. [`ALL`] lists every script once; a unit test below compares the
//! `KEYS[n] name` / `ARGV[n] name` header lines of every `lua/*.lua` with it,
//! so a header and its Rust side cannot drift apart unnoticed.
//!
//! Beside each call's KEYS/ARGV stand the [`Role`]s that run the script (its
//! `roles { ... }` line): the one table of who runs what, read by the
//! operator tools ([`run_by`]). A role runs a script when one of its
//! subcommands calls it (docs/security.md says which subcommand runs as
//! which role); the operator runs every one, the load-test scripts through
//! `seckill loadtest`.

use std::sync::LazyLock;

use anyhow::{Context, Result};
use redis::{ConnectionLike, Script, ScriptInvocation, Value};

use crate::model::role::Role;

pub mod acl_probe;
pub mod bucket_admit;
pub mod bucket_buy;
pub mod bucket_copy;
pub mod bucket_credit;
pub mod bucket_cursor;
pub mod bucket_snapshot;
pub mod bucket_take;
pub mod buy;
pub mod consumer_delete;
pub mod dead_letter;
pub mod fence;
pub mod fence_reapply;
pub mod item_state;
pub mod item_status;
#[cfg(test)]
mod library;
pub mod limit_claim;
pub mod limit_release;
pub mod lock_release;
pub mod order_lookup;
pub mod pay;
pub mod preheat;
pub mod queue_admit;
pub mod queue_clock;
pub mod queue_fanout;
pub mod queue_join;
pub mod queue_penalize;
pub mod queue_read;
pub mod queue_register;
pub mod queue_setup;
pub mod queue_shuffle;
pub mod region_credit;
pub mod region_debit;
pub mod region_mark;
pub mod region_state;
pub mod release;
pub mod room_revoke;
pub mod room_tick;
pub mod seat_buy;
pub mod seat_load;
pub mod set_switch;
pub mod stream_order_ids;
pub mod v3_decr;

/// Who calls a script, so `preheat` loads the sale's scripts up front.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Purpose {
    /// Used by the sale's commands (`buy`, `preheat`, `consume`, `reconcile`, ...).
    Sale,
    /// Used only by `seckill loadtest`, which loads what it needs itself.
    LoadTest,
}

/// One Lua script: its file, source, contract (the names of its KEYS and
/// ARGV) and the roles that run it.
pub struct Spec {
    /// File name under `lua/`.
    pub file: &'static str,
    /// The script as it runs (its includes resolved).
    pub source: &'static str,
    /// KEYS names, in order; the last [`Spec::optional_keys`] of them are optional.
    pub keys: &'static [&'static str],
    /// How many of the last KEYS a call passes only when it has them.
    pub optional_keys: usize,
    /// Fixed ARGV names, in order.
    pub argv: &'static [&'static str],
    /// Name of a variable-length ARGV tail (`ARGV[k..n] name`), if any.
    pub argv_rest: Option<&'static str>,
    /// The roles whose subcommands run this script (docs/security.md).
    pub roles: &'static [Role],
    pub(crate) purpose: Purpose,
    pub(crate) script: LazyLock<Script>,
    /// The typed call built from positional KEYS/ARGV, ready to run.
    positional: PositionalCall,
}

/// KEYS and ARGV by position → the script's typed call, prepared
/// ([`ScriptCall::from_positional`]); `Err` says why they do not fit.
type PositionalCall = fn(Vec<Vec<u8>>, Vec<Vec<u8>>) -> Result<ScriptInvocation<'static>, String>;

impl Spec {
    /// The script's name: its file name without `.lua`.
    pub fn name(&self) -> &'static str {
        self.file.trim_end_matches(".lua")
    }

    /// Whether `role` runs this script.
    pub fn runs(&self, role: Role) -> bool {
        self.roles.contains(&role)
    }

    /// SHA1 of the source, the EVALSHA handle.
    pub(crate) fn sha(&self) -> &str {
        self.script.get_hash()
    }

    /// SCRIPT LOAD on `conn`; returns the SHA1.
    pub(crate) fn load<C: ConnectionLike>(&self, conn: &mut C) -> Result<String> {
        self.script
            .prepare_invoke()
            .load(conn)
            .with_context(|| format!("cannot load the {} script (SCRIPT LOAD)", self.name()))
    }
}

/// Every script of the toolkit, once.
pub static ALL: [&Spec; 42] = [
    &buy::SPEC,
    &preheat::SPEC,
    &item_state::SPEC,
    &item_status::SPEC,
    &set_switch::SPEC,
    &dead_letter::SPEC,
    &stream_order_ids::SPEC,
    &v3_decr::SPEC,
    &lock_release::SPEC,
    &bucket_buy::SPEC,
    &bucket_take::SPEC,
    &bucket_credit::SPEC,
    &bucket_snapshot::SPEC,
    &pay::SPEC,
    &release::SPEC,
    &order_lookup::SPEC,
    &consumer_delete::SPEC,
    &queue_setup::SPEC,
    &queue_join::SPEC,
    &queue_read::SPEC,
    &queue_clock::SPEC,
    &queue_admit::SPEC,
    &queue_fanout::SPEC,
    &queue_register::SPEC,
    &queue_penalize::SPEC,
    &queue_shuffle::SPEC,
    &bucket_admit::SPEC,
    &room_tick::SPEC,
    &room_revoke::SPEC,
    &bucket_cursor::SPEC,
    &bucket_copy::SPEC,
    &acl_probe::SPEC,
    &fence::SPEC,
    &fence_reapply::SPEC,
    &region_debit::SPEC,
    &region_credit::SPEC,
    &region_state::SPEC,
    &region_mark::SPEC,
    &seat_buy::SPEC,
    &seat_load::SPEC,
    &limit_claim::SPEC,
    &limit_release::SPEC,
];

/// The scripts the sale uses, for `preheat` to load up front.
pub(crate) fn sale_scripts() -> impl Iterator<Item = &'static Spec> {
    ALL.into_iter().filter(|spec| spec.purpose == Purpose::Sale)
}

/// The scripts `role` runs.
pub fn run_by(role: Role) -> impl Iterator<Item = &'static Spec> {
    ALL.into_iter().filter(move |spec| spec.runs(role))
}

/// The script of this name (`buy`, `queue_join`, ...).
pub fn by_name(name: &str) -> Option<&'static Spec> {
    ALL.into_iter().find(|spec| spec.name() == name)
}

/// Run the script `name` with KEYS and ARGV given by position, in the order
/// of its header, through its typed call ([`ScriptCall::from_positional`]):
/// a test's way to call any script alike. `Err` when there is no such script
/// or the counts do not fit its call (nothing was sent); `Ok` holds what
/// Redis answered.
pub fn invoke_positional<C: ConnectionLike>(
    name: &str,
    keys: &[impl AsRef<[u8]>],
    argv: &[impl AsRef<[u8]>],
    conn: &mut C,
) -> Result<redis::RedisResult<Value>, String> {
    fn owned(values: &[impl AsRef<[u8]>]) -> Vec<Vec<u8>> {
        values.iter().map(|v| v.as_ref().to_vec()).collect()
    }
    let spec = by_name(name).ok_or_else(|| format!("no script is named {name:?}"))?;
    let invocation = (spec.positional)(owned(keys), owned(argv))?;
    Ok(invocation.invoke(conn))
}

/// [`Spec`]'s positional entry for the call type `Call` (see [`script_call!`]).
fn positional_invocation<Call: ScriptCall<Vec<u8>>>(
    keys: Vec<Vec<u8>>,
    argv: Vec<Vec<u8>>,
) -> Result<ScriptInvocation<'static>, String> {
    Ok(Call::from_positional(keys, argv)?.prepare())
}

/// Why positional KEYS/ARGV do not fit `spec`'s call: what it takes, what was given.
fn positional_mismatch(spec: &Spec, keys: usize, argv: usize) -> Option<String> {
    let fixed_keys = spec.keys.len() - spec.optional_keys;
    let keys_fit = (fixed_keys..=spec.keys.len()).contains(&keys);
    let argv_fit = match spec.argv_rest {
        Some(_) => argv >= spec.argv.len(),
        None => argv == spec.argv.len(),
    };
    if keys_fit && argv_fit {
        return None;
    }
    let (required, optional) = spec.keys.split_at(fixed_keys);
    let mut takes = format!("{} KEYS ({})", required.len(), required.join(", "));
    if !optional.is_empty() {
        takes += &format!(
            " then up to {} optional ({})",
            optional.len(),
            optional.join(", ")
        );
    }
    takes += &format!(" and {} ARGV ({})", spec.argv.len(), spec.argv.join(", "));
    if let Some(rest) = spec.argv_rest {
        takes += &format!(" then any number of {rest}");
    }
    Some(format!(
        "lua/{} takes {takes}; given {keys} KEYS and {argv} ARGV",
        spec.file
    ))
}

/// A typed call of one script: its KEYS and ARGV values, in the script's
/// order. `T` is whatever the caller packs: strings for a normal call, byte
/// templates for the load-test packer.
pub trait ScriptCall<T> {
    /// The script this call runs.
    fn spec() -> &'static Spec;
    /// KEYS values, in order.
    fn keys(&self) -> Vec<&T>;
    /// ARGV values, in order (fixed ones, then the variable tail).
    fn argv(&self) -> Vec<&T>;

    /// The call whose [`ScriptCall::keys`] and [`ScriptCall::argv`] are
    /// these: the optional KEYS present as far as `keys` reaches, the
    /// variable ARGV tail whatever follows the fixed ARGV. `Err` names what
    /// the script takes when the counts do not fit it.
    fn from_positional(keys: Vec<T>, argv: Vec<T>) -> Result<Self, String>
    where
        Self: Sized;

    /// The EVALSHA of this call, ready to run on a connection.
    fn prepare(&self) -> ScriptInvocation<'static>
    where
        T: AsRef<[u8]>,
    {
        let mut invocation = Self::spec().script.prepare_invoke();
        for key in self.keys() {
            invocation.key(key.as_ref());
        }
        for arg in self.argv() {
            invocation.arg(arg.as_ref());
        }
        invocation
    }

    /// Run the script (EVALSHA, reloaded on NOSCRIPT) and return its raw reply.
    fn invoke<C: ConnectionLike>(&self, conn: &mut C) -> redis::RedisResult<Value>
    where
        T: AsRef<[u8]>,
    {
        self.prepare().invoke(conn)
    }

    /// [`ScriptCall::invoke`] on an async connection (`seckill serve`).
    fn invoke_async<C: redis::aio::ConnectionLike + Send>(
        &self,
        conn: &mut C,
    ) -> impl std::future::Future<Output = redis::RedisResult<Value>> + Send
    where
        T: AsRef<[u8]>,
    {
        let invocation = self.prepare();
        async move { invocation.invoke_async(conn).await }
    }

    /// The words of `EVALSHA sha numkeys KEYS... ARGV...` for this call.
    fn evalsha_words(&self) -> Vec<Vec<u8>>
    where
        T: AsRef<[u8]>,
    {
        let keys = self.keys();
        let mut words = vec![
            b"EVALSHA".to_vec(),
            Self::spec().sha().as_bytes().to_vec(),
            keys.len().to_string().into_bytes(),
        ];
        words.extend(keys.into_iter().map(|k| k.as_ref().to_vec()));
        words.extend(self.argv().into_iter().map(|a| a.as_ref().to_vec()));
        words
    }
}

/// Declare one script's [`Spec`] (`SPEC`) and its call type, listing the
/// roles that run it, then KEYS then ARGV once: the field order is the
/// script's order. `optional { ... }` keys follow the others and are
/// `Option`s: a call passes them only when it has them (the buy scripts'
/// waiting-room keys, passed only for an item whose room is on, so a sale
/// without one sends exactly the keys it always did).
macro_rules! script_call {
    (@rest) => { None };
    (@rest $rest:ident) => { Some(stringify!($rest)) };
    (@role buyer) => { $crate::model::role::Role::Buyer };
    (@role consumer) => { $crate::model::role::Role::Consumer };
    (@role operator) => { $crate::model::role::Role::Operator };
    (
        $(#[$doc:meta])*
        $call:ident = $file:literal, $purpose:ident;
        roles { $($role:ident),+ $(,)? }
        keys { $($key:ident),* $(,)? }
        $(optional { $($optional:ident),* $(,)? })?
        argv { $($arg:ident),* $(,)? }
        $(rest { $rest:ident })?
    ) => {
        /// The script's file, source, KEYS/ARGV names and roles.
        pub(crate) static SPEC: $crate::redis_client::scripts::Spec = $crate::redis_client::scripts::Spec {
            file: $file,
            source: include_str!(concat!(env!("OUT_DIR"), "/lua/", $file)),
            keys: &[$(stringify!($key),)* $($(stringify!($optional)),*)?],
            optional_keys: <[&str]>::len(&[$($(stringify!($optional)),*)?]),
            argv: &[$(stringify!($arg)),*],
            argv_rest: $crate::redis_client::scripts::script_call!(@rest $($rest)?),
            roles: &[$($crate::redis_client::scripts::script_call!(@role $role)),+],
            purpose: $crate::redis_client::scripts::Purpose::$purpose,
            script: std::sync::LazyLock::new(|| {
                redis::Script::new(include_str!(concat!(env!("OUT_DIR"), "/lua/", $file)))
            }),
            positional: $crate::redis_client::scripts::positional_invocation::<$call<Vec<u8>>>,
        };

        $(#[$doc])*
        #[derive(Debug, Clone)]
        pub struct $call<T> {
            $(pub $key: T,)*
            $($(pub $optional: Option<T>,)*)?
            $(pub $arg: T,)*
            $(pub $rest: Vec<T>,)?
        }

        impl<T> $crate::redis_client::scripts::ScriptCall<T> for $call<T> {
            fn spec() -> &'static $crate::redis_client::scripts::Spec {
                &SPEC
            }
            #[allow(unused_mut)]
            fn keys(&self) -> Vec<&T> {
                let mut keys: Vec<&T> = vec![$(&self.$key),*];
                $($(keys.extend(self.$optional.as_ref());)*)?
                keys
            }
            #[allow(unused_mut)]
            fn argv(&self) -> Vec<&T> {
                let mut argv: Vec<&T> = vec![$(&self.$arg),*];
                $(argv.extend(self.$rest.iter());)?
                argv
            }
            #[allow(unused_mut, unused_variables)]
            fn from_positional(keys: Vec<T>, argv: Vec<T>) -> Result<Self, String> {
                if let Some(mismatch) =
                    $crate::redis_client::scripts::positional_mismatch(&SPEC, keys.len(), argv.len())
                {
                    return Err(mismatch);
                }
                let mut keys = keys.into_iter();
                let mut argv = argv.into_iter();
                let counted = || format!("lua/{}: counted above", $file);
                // Fields are filled in declaration order: KEYS, optional KEYS, ARGV, the tail.
                Ok($call {
                    $($key: keys.next().ok_or_else(counted)?,)*
                    $($($optional: keys.next(),)*)?
                    $($arg: argv.next().ok_or_else(counted)?,)*
                    $($rest: argv.collect(),)?
                })
            }
        }
    };
}
pub(crate) use script_call;

/// A script found a stored value malformed and wrote nothing: the
/// `{'corrupt_state', "<key>: <what is wrong>"}` reply of the bucket scripts
/// (`lua/buy.lua` and `lua/bucket_buy.lua` answer it as a buy outcome instead).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CorruptState(pub String);

impl std::fmt::Display for CorruptState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "corrupt state, nothing written: {}", self.0)
    }
}

impl std::error::Error for CorruptState {}

/// `Err(CorruptState)` when `reply` is a `corrupt_state` reply.
pub(crate) fn refuse_corrupt(reply: &Value) -> Result<(), CorruptState> {
    if let Value::Array(fields) = reply
        && let [Value::BulkString(status), Value::BulkString(problem)] = fields.as_slice()
        && status == b"corrupt_state"
    {
        return Err(CorruptState(String::from_utf8_lossy(problem).into_owned()));
    }
    Ok(())
}

/// An integer reply, named for errors.
pub(crate) fn int_reply(reply: Value, what: &str) -> Result<i64> {
    redis::from_redis_value(reply).with_context(|| format!("the {what} script answered oddly"))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    /// (KEYS names, fixed ARGV names, variable ARGV tail) read from a header.
    type Contract = (Vec<String>, Vec<String>, Option<String>);

    /// Parse the `-- KEYS[n] name` / `-- ARGV[n] name` / `-- ARGV[k..n] name`
    /// lines of a script's header; indexes must run 1, 2, 3, ...
    fn header_contract(file: &str, source: &str) -> Contract {
        let mut keys = Vec::new();
        let mut argv = Vec::new();
        let mut rest = None;
        for line in source.lines() {
            let Some(line) = line.strip_prefix("--") else {
                continue;
            };
            let line = line.trim_start();
            for (kind, list) in [("KEYS[", &mut keys), ("ARGV[", &mut argv)] {
                let Some(tail) = line.strip_prefix(kind) else {
                    continue;
                };
                let (index, tail) = tail
                    .split_once(']')
                    .unwrap_or_else(|| panic!("{file}: unclosed {kind} in {line:?}"));
                let name = tail
                    .split_whitespace()
                    .next()
                    .unwrap_or_else(|| panic!("{file}: {kind}{index}] has no name"))
                    .to_string();
                if let Some((first, _)) = index.split_once("..") {
                    assert_eq!(kind, "ARGV[", "{file}: only ARGV may be variable");
                    assert_eq!(first, (list.len() + 1).to_string(), "{file}: {line:?}");
                    rest = Some(name);
                } else {
                    assert_eq!(
                        index,
                        (list.len() + 1).to_string(),
                        "{file}: {kind}{index}] out of order"
                    );
                    list.push(name);
                }
            }
        }
        (keys, argv, rest)
    }

    fn lua_root() -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("lua")
    }

    /// Every script of `lua/` as it runs: includes resolved.
    fn lua_files() -> BTreeMap<String, String> {
        let root = lua_root();
        library::scripts(&root)
            .expect("lua/ is readable")
            .into_iter()
            .map(|file| {
                let source = library::resolve(&root, &file).unwrap_or_else(|e| panic!("{e}"));
                (file, source)
            })
            .collect()
    }

    /// Every file of `lua/` and `lua/lib/`, unresolved: (path under lua/, text).
    fn lua_sources() -> Vec<(String, String)> {
        let root = lua_root();
        let mut found = Vec::new();
        for dir in ["", "lib/"] {
            for entry in std::fs::read_dir(root.join(dir)).expect("lua/ is readable") {
                let path = entry.expect("lua/ entry").path();
                if path.extension().is_some_and(|ext| ext == "lua") {
                    let name = format!("{dir}{}", path.file_name().unwrap().to_string_lossy());
                    found.push((name, std::fs::read_to_string(&path).expect("readable")));
                }
            }
        }
        found.sort();
        found
    }

    #[test]
    fn every_lua_file_has_one_rust_home() {
        let files = lua_files();
        let homes: Vec<&str> = ALL.iter().map(|spec| spec.file).collect();
        for file in files.keys() {
            assert_eq!(
                homes.iter().filter(|home| *home == file).count(),
                1,
                "lua/{file} needs exactly one entry in scripts::ALL"
            );
        }
        assert_eq!(
            homes.len(),
            files.len(),
            "scripts::ALL names a missing file"
        );
    }

    /// The header test on what runs: each resolved script's own KEYS/ARGV
    /// lines against its Rust call (a library has none of its own).
    #[test]
    fn lua_headers_match_the_rust_calls() {
        let files = lua_files();
        for spec in ALL {
            let source = &files[spec.file];
            assert_eq!(
                source, spec.source,
                "{}: embedded source is stale",
                spec.file
            );
            assert!(
                !source.starts_with("--- @include") && !source.contains("\n--- @include"),
                "{}: an include was left unresolved",
                spec.file
            );
            let (keys, argv, rest) = header_contract(spec.file, source);
            assert_eq!(keys, spec.keys, "lua/{}: KEYS header vs Rust", spec.file);
            assert_eq!(argv, spec.argv, "lua/{}: ARGV header vs Rust", spec.file);
            assert_eq!(
                rest.as_deref(),
                spec.argv_rest,
                "lua/{}: variable ARGV header vs Rust",
                spec.file
            );
        }
        for (name, source) in lua_sources() {
            if name.starts_with("lib/") {
                assert_eq!(
                    header_contract(&name, &source),
                    (Vec::new(), Vec::new(), None),
                    "lua/{name}: a library must not carry KEYS/ARGV contract lines"
                );
            }
        }
    }

    /// One library: every named function of `lua/**/*.lua` is defined in
    /// exactly one file, every include names a library that exists, and every
    /// library is included by some script.
    #[test]
    fn every_helper_is_defined_once_and_every_include_resolves() {
        let sources = lua_sources();
        let mut defined: BTreeMap<String, String> = BTreeMap::new();
        let mut included = std::collections::BTreeSet::new();
        for (name, source) in &sources {
            for line in source.lines() {
                let line = line.trim_start();
                let helper = line
                    .strip_prefix("local function ")
                    .or_else(|| line.strip_prefix("function "))
                    .and_then(|rest| rest.split('(').next());
                if let Some(helper) = helper
                    && let Some(first) = defined.insert(helper.to_string(), name.clone())
                {
                    panic!("{helper} is defined in lua/{first} and again in lua/{name}");
                }
            }
            for library in library::includes_of(source).unwrap_or_else(|e| panic!("{name}: {e}")) {
                assert!(
                    sources
                        .iter()
                        .any(|(file, _)| *file == format!("{library}.lua")),
                    "lua/{name} includes {library}, which is not in lua/lib/"
                );
                included.insert(format!("{library}.lua"));
            }
        }
        for (name, _) in &sources {
            if name.starts_with("lib/") {
                assert!(included.contains(name), "lua/{name} is included by nothing");
            }
        }
        for spec in ALL {
            library::resolve(&lua_root(), spec.file).unwrap_or_else(|e| panic!("{e}"));
        }
    }

    /// The names a Lua text uses (identifiers, not the fields after `.` or
    /// `:`), its comments and quoted strings skipped: what its code refers to.
    fn lua_names(source: &str) -> Vec<&str> {
        let mut names = Vec::new();
        for line in source.lines() {
            let bytes = line.as_bytes();
            let (mut i, mut field) = (0, false);
            while i < bytes.len() {
                let c = bytes[i];
                if bytes[i..].starts_with(b"--") {
                    break;
                }
                if c == b'\'' || c == b'"' {
                    i += 1;
                    while i < bytes.len() && bytes[i] != c {
                        i += if bytes[i] == b'\\' { 2 } else { 1 };
                    }
                    (i, field) = (i + 1, false);
                } else if c.is_ascii_alphabetic() || c == b'_' {
                    let start = i;
                    while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_')
                    {
                        i += 1;
                    }
                    if !field {
                        names.push(&line[start..i]);
                    }
                    field = false;
                } else if bytes[i..].starts_with(b"..") {
                    (i, field) = (i + 2, false);
                } else {
                    field = c == b'.' || c == b':';
                    i += 1;
                }
            }
        }
        names
    }

    /// The helpers a Lua text defines: its `local function NAME` lines.
    fn local_functions(source: &str) -> Vec<&str> {
        source
            .lines()
            .filter_map(|line| line.trim_start().strip_prefix("local function "))
            .filter_map(|rest| rest.split('(').next())
            .collect()
    }

    /// Scripts include what they use, and nothing else: every helper a
    /// resolved script defines is referred to somewhere else in it (a
    /// helper never called is Lua built again on every call, for nothing).
    #[test]
    fn no_resolved_script_carries_a_helper_it_never_calls() {
        for (file, resolved) in lua_files() {
            let names = lua_names(&resolved);
            for helper in local_functions(&resolved) {
                let uses = names.iter().filter(|name| **name == helper).count();
                assert!(
                    uses >= 2,
                    "lua/{file}, resolved, defines {helper} and never calls it: \
                     drop the include that brings it"
                );
            }
        }
    }

    /// A file includes the helpers it calls itself, not through another
    /// include that happens to bring them, and no library it does not call:
    /// each library may then change its own includes freely.
    #[test]
    fn every_file_includes_the_libraries_it_calls_and_no_other() {
        let sources = lua_sources();
        let mut home: BTreeMap<&str, String> = BTreeMap::new();
        for (name, source) in &sources {
            if let Some(library) = name.strip_prefix("lib/") {
                for helper in local_functions(source) {
                    home.insert(helper, format!("lib/{}", library.trim_end_matches(".lua")));
                }
            }
        }
        for (name, source) in &sources {
            let own = local_functions(source);
            let called: std::collections::BTreeSet<&String> = lua_names(source)
                .into_iter()
                .filter(|helper| !own.contains(helper))
                .filter_map(|helper| home.get(helper))
                .collect();
            let included: std::collections::BTreeSet<String> = library::includes_of(source)
                .unwrap_or_else(|e| panic!("{name}: {e}"))
                .into_iter()
                .collect();
            for library in &called {
                assert!(
                    included.contains(*library),
                    "lua/{name} calls a helper of {library} without including it"
                );
            }
            for library in &included {
                assert!(
                    called.contains(library),
                    "lua/{name} includes {library} but calls none of its helpers"
                );
            }
        }
    }

    /// `#!lua` stays on line 1 of every script that has it (Redis honours the
    /// shebang nowhere else), and the resolver refuses an include there.
    #[test]
    fn the_shebang_stays_on_line_one() {
        for (name, source) in lua_sources() {
            let resolved = &lua_files().get(&name).cloned();
            if let Some(resolved) = resolved {
                assert_eq!(
                    source.starts_with("#!lua"),
                    resolved.starts_with("#!lua"),
                    "lua/{name}: the shebang moved"
                );
                assert!(
                    !resolved.lines().skip(1).any(|l| l.starts_with("#!")),
                    "lua/{name}: a shebang below line 1"
                );
            }
        }
        let dir = tempfile_dir("shebang");
        std::fs::create_dir_all(dir.join("lib")).unwrap();
        std::fs::write(dir.join("lib/x.lua"), "local function x() end\n").unwrap();
        std::fs::write(dir.join("s.lua"), "--- @include \"lib/x\"\n#!lua\n").unwrap();
        let refused = library::resolve(&dir, "s.lua").unwrap_err();
        assert!(refused.contains("line 1"), "{refused}");
        std::fs::write(dir.join("t.lua"), "#!lua\n--- @include \"lib/y\"\n").unwrap();
        let missing = library::resolve(&dir, "t.lua").unwrap_err();
        assert!(
            missing.contains("lua/t.lua:2") && missing.contains("lib/y.lua"),
            "{missing}"
        );
        std::fs::write(dir.join("lib/a.lua"), "--- @include \"lib/b\"\n").unwrap();
        std::fs::write(dir.join("lib/b.lua"), "--- @include \"lib/a\"\n").unwrap();
        std::fs::write(dir.join("u.lua"), "#!lua\n--- @include \"lib/a\"\n").unwrap();
        let circle = library::resolve(&dir, "u.lua").unwrap_err();
        assert!(circle.contains("circle"), "{circle}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// One helper per file means many paths to the same file (nearly every
    /// helper includes lib/read): the resolver pastes a library once, where
    /// it is first included, above the first helper that calls it.
    #[test]
    fn a_library_reached_twice_is_pasted_once_above_its_first_user() {
        let dir = tempfile_dir("once");
        std::fs::create_dir_all(dir.join("lib")).unwrap();
        std::fs::write(dir.join("lib/a.lua"), "local function a() end\n").unwrap();
        let b = "--- @include \"lib/a\"\nlocal function b() return a() end\n";
        std::fs::write(dir.join("lib/b.lua"), b).unwrap();
        let c = "--- @include \"lib/a\"\n--- @include \"lib/b\"\nlocal function c() return a(), b() end\n";
        std::fs::write(dir.join("lib/c.lua"), c).unwrap();
        let script = "#!lua\n--- @include \"lib/c\"\n--- @include \"lib/b\"\nreturn c()\n";
        std::fs::write(dir.join("s.lua"), script).unwrap();
        let resolved = library::resolve(&dir, "s.lua").unwrap();
        assert_eq!(
            resolved,
            "#!lua\nlocal function a() end\nlocal function b() return a() end\n\
             local function c() return a(), b() end\nreturn c()\n"
        );
        for (file, resolved) in lua_files() {
            let helpers = local_functions(&resolved);
            for helper in &helpers {
                let definitions = helpers.iter().filter(|h| *h == helper).count();
                assert_eq!(
                    definitions, 1,
                    "lua/{file}, resolved, defines {helper} twice"
                );
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A scratch directory under the target dir (no temp-dir crate in the lib's tests).
    fn tempfile_dir(name: &str) -> std::path::PathBuf {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("target")
            .join(format!("lua-library-test-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// Scripts are content-addressed: a changed library changes the SHA of
    /// every script that includes it, and only theirs.
    #[test]
    fn changing_a_shared_helper_changes_every_sha_that_includes_it() {
        let dir = tempfile_dir("sha");
        let root = lua_root();
        std::fs::create_dir_all(dir.join("lib")).unwrap();
        for (name, source) in lua_sources() {
            std::fs::write(dir.join(&name), source).unwrap();
        }
        let sha = |root: &std::path::Path, file: &str| {
            Script::new(&library::resolve(root, file).unwrap())
                .get_hash()
                .to_string()
        };
        let helper = "lib/strict_int.lua";
        let edited = std::fs::read_to_string(root.join(helper)).unwrap() + "-- edited\n";
        std::fs::write(dir.join(helper), edited).unwrap();
        let mut including = 0;
        for spec in ALL {
            assert_eq!(
                sha(&root, spec.file),
                spec.sha(),
                "{}: SHA of what runs",
                spec.file
            );
            let uses = spec.source.contains("local function strict_int(");
            assert_eq!(
                sha(&dir, spec.file) != spec.sha(),
                uses,
                "{}: includes {helper}: {uses}, but its SHA did not follow",
                spec.file
            );
            including += usize::from(uses);
        }
        assert!(including >= 10, "only {including} scripts include {helper}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn every_outcome_has_one_exit_code_and_every_code_an_outcome() {
        use crate::model::exit_codes::{OUTCOMES, RUNTIME_ERROR, of_outcome};
        let names: Vec<&str> = buy::Outcome::ALL
            .iter()
            .map(|o| o.as_str())
            .chain(pay::OrderOutcome::ALL.iter().map(|o| o.as_str()))
            .chain(queue_join::JoinOutcome::ALL.iter().map(|o| o.as_str()))
            .chain(
                queue_register::RegisterOutcome::ALL
                    .iter()
                    .map(|o| o.as_str()),
            )
            .collect();
        for name in &names {
            assert_ne!(of_outcome(name), RUNTIME_ERROR, "{name} has no exit code");
        }
        for (name, _) in OUTCOMES {
            assert!(names.contains(name), "{name} is no outcome");
        }
        assert_eq!(buy::Outcome::SoldOut.exit_code(), 10);
        assert_eq!(pay::OrderOutcome::WasCancelled.exit_code(), 32);
    }

    #[test]
    fn sale_scripts_include_every_sale_script() {
        let names: Vec<&str> = sale_scripts().map(Spec::name).collect();
        assert_eq!(
            names,
            [
                "buy",
                "preheat",
                "item_state",
                "item_status",
                "set_switch",
                "dead_letter",
                "stream_order_ids",
                "bucket_buy",
                "bucket_take",
                "bucket_credit",
                "bucket_snapshot",
                "pay",
                "release",
                "order_lookup",
                "consumer_delete",
                "queue_setup",
                "queue_join",
                "queue_read",
                "queue_clock",
                "queue_admit",
                "queue_fanout",
                "queue_register",
                "queue_penalize",
                "queue_shuffle",
                "bucket_admit",
                "room_tick",
                "room_revoke",
                "bucket_cursor",
                "bucket_copy",
                "acl_probe",
                "fence",
                "fence_reapply",
                "region_debit",
                "region_credit",
                "region_state",
                "region_mark",
                "seat_buy",
                "seat_load",
                "limit_claim",
                "limit_release"
            ]
        );
    }

    #[test]
    fn every_role_runs_a_script_and_every_script_has_a_role() {
        for role in Role::ALL {
            assert!(
                run_by(role).next().is_some(),
                "the {} role runs no script",
                role.name()
            );
        }
        for spec in ALL {
            assert!(!spec.roles.is_empty(), "nobody runs lua/{}", spec.file);
            for role in Role::ALL {
                assert!(
                    spec.roles.iter().filter(|r| **r == role).count() <= 1,
                    "lua/{}: {} listed twice",
                    spec.file,
                    role.name()
                );
            }
        }
    }

    /// Positional KEYS/ARGV build the call a typed caller writes: the
    /// optional KEYS present as far as given, the ARGV tail whatever
    /// follows the fixed ARGV, and a count that does not fit refused by name.
    #[test]
    fn a_positional_call_is_the_typed_call() {
        let words = |what: &str, n: usize| -> Vec<String> {
            (1..=n).map(|i| format!("{what}{i}")).collect()
        };
        let argv = words("a", 10);
        let plain = buy::Buy::from_positional(words("k", 10), argv.clone()).unwrap();
        assert_eq!(plain.room, None);
        assert_eq!((plain.meta.as_str(), plain.user.as_str()), ("k1", "a1"));
        let in_room = buy::Buy::from_positional(words("k", 17), argv.clone()).unwrap();
        assert_eq!(in_room.shuffled.as_deref(), Some("k17"));
        for call in [plain, in_room] {
            let keys: Vec<&String> = call.keys();
            assert_eq!(keys, words("k", keys.len()).iter().collect::<Vec<_>>());
            assert_eq!(call.argv(), argv.iter().collect::<Vec<_>>());
        }

        let admit =
            bucket_admit::BucketAdmit::from_positional(words("k", 2), words("a", 5)).unwrap();
        assert_eq!((admit.mode.as_str(), admit.entry.len()), ("a1", 3));
        let read = queue_read::QueueRead::from_positional(words("k", 7), Vec::new()).unwrap();
        assert!(read.user.is_empty());

        let short = buy::Buy::from_positional(words("k", 9), argv.clone()).unwrap_err();
        assert!(
            short.contains("lua/buy.lua takes 10 KEYS (meta, stock,")
                && short.contains("then up to 9 optional (room,")
                && short.contains("given 9 KEYS and 10 ARGV"),
            "{short}"
        );
        let long = pay::Pay::from_positional(words("k", 5), words("a", 4)).unwrap_err();
        assert!(long.contains("3 ARGV (order_id, campaign, item)"), "{long}");
        let fixed = bucket_admit::BucketAdmit::from_positional(words("k", 2), words("a", 1));
        assert!(fixed.unwrap_err().contains("then any number of entry"));
    }
}
