//! Where the kernel gives no user namespace (SPEC §18, "where the kernel says no"),
//! the sandbox's fork server is confined instead of boxed: Landlock and a seccomp
//! filter, set by `rwb __contain` on itself before it becomes the server, so that the
//! server and every run it forks inherit them (neither can be lifted).
//!
//! - **Landlock** ([`landlock`]): the whole filesystem readable and executable,
//!   writable only beneath one folder of the server's own ([`base_folder`]; the
//!   server makes a folder per run there, and narrows each run to its own with a
//!   Landlock layer of its own) and the few devices a program writes to; no TCP bind
//!   or connect (ABI 4); no signal to, and no abstract socket of, a process outside
//!   (ABI 6). A process outside the domain cannot be traced, nor its `/proc` files
//!   read, from inside.
//! - **seccomp** ([`seccompiler`]): no socket but Unix ones, no `ptrace`, no mounts,
//!   no new namespaces (`unshare`, `setns`, `clone` with a namespace flag), no kernel
//!   keyrings, BPF, perf, userfaultfd or io_uring. `clone3` answers `ENOSYS`, so that
//!   the C library falls back to `clone`, whose flags the filter can read.
//!
//! The limits on memory, CPU time, file size and processes are the server's own to
//! set on each run (rlimits), as in a box.

use seccompiler::{
    SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
    TargetArch,
};
use std::collections::BTreeMap;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

/// The environment variable naming the folder a confined server may write in.
pub const BASE: &str = "RWB_SANDBOX_BASE";

/// What [`confine`] set: said in the state variable.
pub struct Confined {
    /// The only folder (besides a few devices) the program may write in.
    pub base: PathBuf,
    /// The Landlock ABI the kernel speaks.
    pub abi: i32,
}

impl Confined {
    /// How the confinement is described to the user (`rwb check`, the status line).
    pub fn describe(&self) -> String {
        format!("Landlock (ABI {}) + seccomp + rlimits", self.abi)
    }
}

/// The Landlock ABI of the running kernel (0: none).
pub fn landlock_abi() -> i32 {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: with this flag the call takes no attribute and only answers a number.
    let abi = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    if abi < 0 {
        0
    } else {
        abi as i32
    }
}

/// Confines the calling (single-threaded) process and what it will start: see the
/// module's description. Nothing is set unless everything can be (the folder is made
/// first; Landlock is refused as a whole when the kernel lacks it).
pub fn confine() -> Result<Confined, String> {
    let abi = landlock_abi();
    if abi < 1 {
        return Err("no Landlock in this kernel (Linux 5.13+ with `lsm=landlock`)".into());
    }
    let base = base_folder().map_err(|e| format!("cannot make the sandbox's folder: {e}"))?;
    let filters = filters()?;
    apply_landlock(&base)?;
    // SAFETY: prctl with PR_SET_NO_NEW_PRIVS takes plain integers (also set by Landlock).
    unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) };
    for filter in &filters {
        seccompiler::apply_filter(filter).map_err(|e| format!("seccomp refused: {e}"))?;
    }
    Ok(Confined { base, abi })
}

/// A fresh folder of this process's own in the temporary folder, for the server's
/// runs; the folders of servers gone (their process ended) are removed first.
pub fn base_folder() -> std::io::Result<PathBuf> {
    let tmp = std::env::temp_dir();
    if let Ok(entries) = std::fs::read_dir(&tmp) {
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(pid) = name
                .to_str()
                .and_then(|n| n.strip_prefix("rwb-sandbox-"))
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            let mine = entry.metadata().is_ok_and(|m| {
                std::os::unix::fs::MetadataExt::uid(&m) == unsafe { libc::getuid() }
            });
            if mine && !Path::new(&format!("/proc/{pid}")).exists() {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    }
    let base = tmp.join(format!("rwb-sandbox-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&base)
        .map(|()| base)
}

fn apply_landlock(base: &Path) -> Result<(), String> {
    use landlock::{
        Access, AccessFs, AccessNet, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset,
        RulesetAttr, RulesetCreatedAttr, Scope, ABI,
    };
    let abi = ABI::V6;
    let fail = |e: landlock::RulesetError| format!("Landlock refused: {e}");
    let devices = ["/dev/null", "/dev/zero", "/dev/full", "/dev/tty"];
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(abi))
        .map_err(fail)?
        .handle_access(AccessNet::from_all(abi))
        .map_err(fail)?
        .scope(Scope::from_all(abi))
        .map_err(fail)?
        .create()
        .map_err(fail)?;
    let root = PathFd::new("/").map_err(|e| format!("Landlock: /: {e}"))?;
    ruleset = ruleset
        .add_rule(PathBeneath::new(root, AccessFs::from_read(abi)))
        .map_err(fail)?;
    let folder = PathFd::new(base).map_err(|e| format!("Landlock: {}: {e}", base.display()))?;
    ruleset = ruleset
        .add_rule(PathBeneath::new(folder, AccessFs::from_all(abi)))
        .map_err(fail)?;
    for device in devices {
        if let Ok(fd) = PathFd::new(device) {
            let rights = AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::IoctlDev;
            ruleset = ruleset
                .add_rule(PathBeneath::new(fd, rights))
                .map_err(fail)?;
        }
    }
    let status = ruleset.restrict_self().map_err(fail)?;
    if status.ruleset == landlock::RulesetStatus::NotEnforced {
        return Err("Landlock is not enforced by this kernel".into());
    }
    Ok(())
}

/// The system calls a confined program is refused whatever their arguments (EPERM);
/// `c_long` is `i64` on every architecture rwb confines (64-bit ones).
fn refused() -> Vec<i64> {
    let mut calls = vec![
        libc::SYS_ptrace,
        libc::SYS_process_vm_readv,
        libc::SYS_process_vm_writev,
        libc::SYS_mount,
        libc::SYS_umount2,
        libc::SYS_pivot_root,
        libc::SYS_chroot,
        libc::SYS_unshare,
        libc::SYS_setns,
        libc::SYS_keyctl,
        libc::SYS_add_key,
        libc::SYS_request_key,
        libc::SYS_bpf,
        libc::SYS_perf_event_open,
        libc::SYS_userfaultfd,
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
        libc::SYS_open_by_handle_at,
        libc::SYS_name_to_handle_at,
        libc::SYS_kexec_load,
        libc::SYS_init_module,
        libc::SYS_finit_module,
        libc::SYS_delete_module,
        libc::SYS_fsopen,
        libc::SYS_fsmount,
        libc::SYS_move_mount,
        libc::SYS_open_tree,
        libc::SYS_mount_setattr,
    ];
    #[cfg(target_arch = "x86_64")]
    calls.extend([libc::SYS_umount2, libc::SYS_iopl, libc::SYS_ioperm]);
    calls.sort_unstable();
    calls.dedup();
    calls
}

/// The namespace flags `clone` is refused with.
const NAMESPACE_FLAGS: [u64; 7] = [
    libc::CLONE_NEWUSER as u64,
    libc::CLONE_NEWNS as u64,
    libc::CLONE_NEWPID as u64,
    libc::CLONE_NEWNET as u64,
    libc::CLONE_NEWIPC as u64,
    libc::CLONE_NEWUTS as u64,
    libc::CLONE_NEWCGROUP as u64,
];

fn arch() -> Result<TargetArch, String> {
    if cfg!(target_arch = "x86_64") {
        Ok(TargetArch::x86_64)
    } else if cfg!(target_arch = "aarch64") {
        Ok(TargetArch::aarch64)
    } else if cfg!(target_arch = "riscv64") {
        Ok(TargetArch::riscv64)
    } else {
        Err(format!("no seccomp filter for {}", std::env::consts::ARCH))
    }
}

/// The two filters: the refusals (EPERM), and `clone3` (ENOSYS).
fn filters() -> Result<Vec<seccompiler::BpfProgram>, String> {
    let fail = |e: seccompiler::BackendError| format!("seccomp filter: {e}");
    let arch = arch()?;
    // x86_64's x32 system calls are the same numbers with this bit set
    let x32 = |nr: i64| {
        if cfg!(target_arch = "x86_64") {
            Some(nr | 0x4000_0000)
        } else {
            None
        }
    };
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for nr in refused() {
        rules.insert(nr, Vec::new());
        if let Some(other) = x32(nr) {
            rules.insert(other, Vec::new());
        }
    }
    // a socket of any family but AF_UNIX
    let not_unix = SeccompRule::new(vec![SeccompCondition::new(
        0,
        SeccompCmpArgLen::Dword,
        SeccompCmpOp::Ne,
        libc::AF_UNIX as u64,
    )
    .map_err(fail)?])
    .map_err(fail)?;
    for nr in [libc::SYS_socket, libc::SYS_socketpair] {
        rules.insert(nr, vec![not_unix.clone()]);
        if let Some(other) = x32(nr) {
            rules.insert(other, vec![not_unix.clone()]);
        }
    }
    let mut clone_rules = Vec::new();
    for flag in NAMESPACE_FLAGS {
        clone_rules.push(
            SeccompRule::new(vec![SeccompCondition::new(
                0,
                SeccompCmpArgLen::Qword,
                SeccompCmpOp::MaskedEq(flag),
                flag,
            )
            .map_err(fail)?])
            .map_err(fail)?,
        );
    }
    rules.insert(libc::SYS_clone, clone_rules);
    let refusals = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(fail)?;
    let mut clone3 = BTreeMap::new();
    clone3.insert(libc::SYS_clone3, Vec::new());
    let clone3 = SeccompFilter::new(
        clone3,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::ENOSYS as u32),
        arch,
    )
    .map_err(fail)?;
    let mut programs = Vec::new();
    for filter in [refusals, clone3] {
        programs.push(filter.try_into().map_err(fail)?);
    }
    Ok(programs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filters_compile_for_this_machine() {
        let programs = filters().unwrap();
        assert_eq!(programs.len(), 2);
        assert!(programs.iter().all(|p| !p.is_empty()));
    }
}
