//! Who this process is, for audit trails and consumer names: the OS
//! account from the password database (`getpwuid_r`, so NSS and LDAP
//! accounts work too), then `$USER`/`$LOGNAME`, then `uid N`; and the host name.

use std::ffi::CStr;

/// The name of this process' user: password database, then the environment,
/// then the numeric uid.
pub(crate) fn os_account() -> String {
    // SAFETY: getuid cannot fail and has no preconditions.
    let uid = unsafe { libc::getuid() };
    password_database_name(uid)
        .or_else(|| {
            ["USER", "LOGNAME"]
                .into_iter()
                .filter_map(|v| std::env::var(v).ok())
                .find(|v| !v.trim().is_empty())
        })
        .unwrap_or_else(|| format!("uid {uid}"))
}

/// `getpwuid_r(uid)`'s `pw_name`, when the password database has the uid.
fn password_database_name(uid: libc::uid_t) -> Option<String> {
    let mut buffer = vec![0 as libc::c_char; 4096];
    loop {
        // SAFETY: every pointer is to live, properly sized storage owned here;
        // `pw_name` points into `buffer`, read before `buffer` is dropped.
        let mut entry: libc::passwd = unsafe { std::mem::zeroed() };
        let mut found: *mut libc::passwd = std::ptr::null_mut();
        let rc = unsafe {
            libc::getpwuid_r(
                uid,
                &mut entry,
                buffer.as_mut_ptr(),
                buffer.len(),
                &mut found,
            )
        };
        if rc == libc::ERANGE && buffer.len() < 1 << 20 {
            buffer.resize(buffer.len() * 2, 0);
            continue;
        }
        if rc != 0 || found.is_null() || entry.pw_name.is_null() {
            return None;
        }
        let name = unsafe { CStr::from_ptr(entry.pw_name) }
            .to_string_lossy()
            .into_owned();
        return (!name.is_empty()).then_some(name);
    }
}

/// This machine's host name, or "unknown".
pub(crate) fn host_name() -> String {
    hostname::get()
        .map(|h| h.to_string_lossy().into_owned())
        .unwrap_or_else(|_| "unknown".into())
}
