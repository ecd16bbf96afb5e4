//! Containing the processes rwb starts for rewards (SPEC §18, "every reward is
//! contained"), built by rwb itself: no bwrap, Docker or root.
//!
//! rwb starts a contained process through itself: `rwb __contain PLAN -- PROGRAM ARGS`
//! ([`wrap`]). That fresh, single-threaded process sets the containment up and then
//! becomes PROGRAM (`execvp`), so nothing is left between rwb and the program, and none
//! of the setting up happens in a forked copy of rwb's many threads.
//!
//! The setting up ([`enter`]), where the kernel allows unprivileged user namespaces:
//! 1. a new user namespace (the caller's user mapped to root inside, so the program
//!    keeps the capabilities it needs to build narrower boxes for its own children), a
//!    new mount namespace, and with `network = false` a new network namespace (only a
//!    loopback device, down);
//! 2. a private tmpfs, and `/tmp` made an overlay of the host's `/tmp` with the
//!    private tmpfs as its upper layer: new files under `/tmp` are the box's own and
//!    vanish with it; what lay there already (a workspace, a virtualenv) is bound back
//!    over the layer as it is on the host, and read-only with the rest (step 3);
//! 3. every mount read-only;
//! 4. the writable holes bound back in: the folders in [`Plan::writable`] as they are on
//!    the host (`~/.cache`, the workspace's `[sandbox] writable`, rwb's runtime folder).
//!
//! Where a step the box depends on fails (no user namespaces: Docker's default seccomp
//! profile, Ubuntu's AppArmor restriction), PROGRAM runs open, and says why in the
//! environment variable [`STATE`] (`open: REASON`); otherwise it holds `contained`.

use serde::{Deserialize, Serialize};
use std::ffi::{CString, OsString};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};

/// At most this many of the entries of `/tmp` are bound back read-only; past them, an
/// entry's changes land in the box's private layer (and vanish with it).
const MAX_TMP_ENTRIES: usize = 1024;

/// The hidden subcommand that sets a box up and becomes its program.
pub const SUBCOMMAND: &str = "__contain";

/// The environment variable a contained program reads its state from: `contained`, or
/// `open: WHY`.
pub const STATE: &str = "RWB_CONTAINMENT";

/// What a box allows.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    /// Host folders that stay writable inside (created first when missing).
    pub writable: Vec<PathBuf>,
    /// Whether the box keeps the host's network (false: a network namespace of its
    /// own, with nothing but a loopback device).
    pub network: bool,
    /// Whether what lies in `/tmp` when the box is built is bound back read-only over
    /// the private layer (else changes to it land in the layer, and vanish with the
    /// box). A box whose programs get a fresh `/tmp` of their own anyway (the
    /// sandbox's) skips it: one mount fewer per entry for every run to copy.
    #[serde(default = "yes")]
    pub tmp_read_only: bool,
    /// Folders whose entry in `/tmp` is bound back first (the workspace), whatever
    /// else `/tmp` holds.
    #[serde(default)]
    pub first: Vec<PathBuf>,
    /// Where no box can be built, confine the program with Landlock and seccomp
    /// ([`super::confine`]) rather than let it run open (the sandbox's fork server).
    #[serde(default)]
    pub confine: bool,
}

fn yes() -> bool {
    true
}

/// `program args…` as a command that runs it in a box made by `plan` (through this
/// very executable, [`SUBCOMMAND`]).
pub fn wrap(
    plan: &Plan,
    program: &Path,
    args: &[OsString],
) -> std::io::Result<std::process::Command> {
    let me = helper()?;
    let mut command = std::process::Command::new(me);
    command
        .arg(SUBCOMMAND)
        .arg(serde_json::to_string(plan).unwrap_or_default())
        .arg("--")
        .arg(program)
        .args(args);
    Ok(command)
}

/// The rwb executable that builds boxes: this one, or (for rwb used as a library, as
/// its own tests do, from `target/*/deps/`) the `rwb` built beside it.
fn helper() -> std::io::Result<PathBuf> {
    let me = std::env::current_exe()?;
    let is_rwb = |p: &Path| p.file_name().is_some_and(|n| n == "rwb") && p.is_file();
    if me.file_name().is_some_and(|n| n == "rwb") {
        // this very executable, even should its file have been replaced since it
        // started (an upgrade, a rebuild): the kernel's link to the running image
        return Ok(PathBuf::from("/proc/self/exe"));
    }
    let beside = me.parent().map(|d| d.join("rwb"));
    let above = me.parent().and_then(Path::parent).map(|d| d.join("rwb"));
    [beside, above]
        .into_iter()
        .flatten()
        .find(|p| is_rwb(p))
        .ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!("no rwb executable beside {} to build the box", me.display()),
            )
        })
}

/// The same as [`wrap`], for tokio.
pub fn wrap_tokio(
    plan: &Plan,
    program: &Path,
    args: &[OsString],
) -> std::io::Result<tokio::process::Command> {
    wrap(plan, program, args).map(tokio::process::Command::from)
}

/// Runs `rwb __contain PLAN -- PROGRAM ARGS…` (its arguments after the subcommand's
/// name): sets the box up and becomes PROGRAM; returns only when PROGRAM cannot be
/// started.
pub fn main(args: &[OsString]) -> std::process::ExitCode {
    let (plan, command) = match parse(args) {
        Ok(parsed) => parsed,
        Err(why) => {
            eprintln!("rwb {SUBCOMMAND}: {why}");
            return std::process::ExitCode::from(2);
        }
    };
    // this process dies with rwb, however rwb ends
    // SAFETY: prctl with PR_SET_PDEATHSIG takes a signal number and nothing else.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) };
    let state = match enter(&plan) {
        Ok(()) => {
            // the program is the first process of a PID namespace of its own: when it
            // ends, whatever it started ends with it; this process waits for it
            if let Err(why) = own_pid_namespace() {
                eprintln!("rwb {SUBCOMMAND}: {why}");
                return std::process::ExitCode::from(70);
            }
            "contained".to_string()
        }
        Err(why) if plan.confine => match super::confine::confine() {
            Ok(confined) => {
                // the program may write only there: its temporary folder too
                std::env::set_var(super::confine::BASE, &confined.base);
                std::env::set_var("TMPDIR", &confined.base);
                format!("confined: {}; {why}", confined.describe())
            }
            Err(refused) => format!("open: {why}; {refused}"),
        },
        Err(why) => format!("open: {why}"),
    };
    let error = std::process::Command::new(&command[0])
        .args(&command[1..])
        .env(STATE, state)
        .exec();
    eprintln!(
        "rwb {SUBCOMMAND}: cannot start {}: {error}",
        Path::new(&command[0]).display()
    );
    std::process::ExitCode::from(127)
}

/// Makes the rest of this process (what `main` execs) the first process of a new PID
/// namespace: unshares, forks, and in the parent waits for the child and ends as it
/// ended (never returning). The child dies with the parent.
fn own_pid_namespace() -> Result<(), String> {
    // SAFETY: single-threaded; unshare and fork are plain system calls here.
    step(
        "no PID namespace (unshare)",
        check(unsafe { libc::unshare(libc::CLONE_NEWPID) }),
    )?;
    let parent = unsafe { libc::getpid() };
    let child = unsafe { libc::fork() };
    if child < 0 {
        return Err(format!("cannot fork: {}", std::io::Error::last_os_error()));
    }
    if child == 0 {
        // SAFETY: as above; a parent gone before the call is caught by the check after
        unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) };
        if unsafe { libc::getppid() } != parent && unsafe { libc::getppid() } != 0 {
            std::process::exit(70);
        }
        return Ok(());
    }
    // the waiting parent passes the signals one sends a process on to the program
    // (a SIGUSR1 asking for stacks, a SIGTERM): they are the program's business
    CHILD.store(child, std::sync::atomic::Ordering::Relaxed);
    for signal in [
        libc::SIGINT,
        libc::SIGHUP,
        libc::SIGTERM,
        libc::SIGQUIT,
        libc::SIGUSR1,
        libc::SIGUSR2,
    ] {
        // SAFETY: the handler only loads an atomic and calls kill(2), both
        // async-signal-safe.
        unsafe {
            libc::signal(
                signal,
                pass_on as extern "C" fn(libc::c_int) as libc::sighandler_t,
            )
        };
    }
    loop {
        let mut status = 0;
        let got = unsafe { libc::waitpid(child, &mut status, 0) };
        if got == child {
            if libc::WIFEXITED(status) {
                std::process::exit(libc::WEXITSTATUS(status));
            }
            if libc::WIFSIGNALED(status) {
                std::process::exit(128 + libc::WTERMSIG(status));
            }
        } else if got < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            std::process::exit(70);
        }
    }
}

/// The program the waiting parent passes signals on to.
static CHILD: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

extern "C" fn pass_on(signal: libc::c_int) {
    let child = CHILD.load(std::sync::atomic::Ordering::Relaxed);
    if child > 0 {
        // SAFETY: kill(2) is async-signal-safe.
        unsafe { libc::kill(child, signal) };
    }
}

fn parse(args: &[OsString]) -> Result<(Plan, Vec<OsString>), String> {
    let [plan, dashes, command @ ..] = args else {
        return Err("usage: rwb __contain PLAN -- PROGRAM [ARGS...]".into());
    };
    if dashes != "--" || command.is_empty() {
        return Err("usage: rwb __contain PLAN -- PROGRAM [ARGS...]".into());
    }
    let plan: Plan = serde_json::from_slice(plan.as_bytes())
        .map_err(|e| format!("the plan is not readable: {e}"))?;
    Ok((plan, command.to_vec()))
}

/// A failed step, said the way the state variable says it.
fn step(what: &str, result: std::io::Result<()>) -> Result<(), String> {
    result.map_err(|e| format!("{what}: {e}"))
}

fn check(ret: libc::c_int) -> std::io::Result<()> {
    if ret == -1 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(())
    }
}

fn c_path(path: &Path) -> std::io::Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidInput, "a NUL in a path"))
}

fn mount(
    source: Option<&Path>,
    target: &Path,
    fstype: Option<&str>,
    flags: libc::c_ulong,
    data: Option<&str>,
) -> std::io::Result<()> {
    let source = source.map(c_path).transpose()?;
    let target = c_path(target)?;
    let fstype = fstype.map(|t| CString::new(t).expect("no NUL"));
    let data = data.map(CString::new).transpose()?;
    let ptr = |c: &Option<CString>| c.as_ref().map_or(std::ptr::null(), |c| c.as_ptr());
    // SAFETY: every pointer is a NUL-terminated string that outlives the call, or null
    // where mount(2) allows it.
    check(unsafe {
        libc::mount(
            ptr(&source),
            target.as_ptr(),
            ptr(&fstype),
            flags,
            ptr(&data).cast(),
        )
    })
}

/// Sets the box up around the calling (single-threaded) process; see the module's
/// description. On an error the process is as it was, unless the error says otherwise.
pub fn enter(plan: &Plan) -> Result<(), String> {
    let (uid, gid) = (unsafe { libc::getuid() }, unsafe { libc::getgid() });
    // the holes exist before the host is out of reach, and are named absolutely
    // (a relative name would be looked up from a folder entered before the box)
    let writable: Vec<PathBuf> = plan
        .writable
        .iter()
        .filter_map(|path| {
            let _ = std::fs::create_dir_all(path);
            std::fs::canonicalize(path).ok()
        })
        .collect();
    let mut flags = libc::CLONE_NEWUSER | libc::CLONE_NEWNS;
    if !plan.network {
        flags |= libc::CLONE_NEWNET;
    }
    // tried first in a child: where the kernel lets a user namespace be made but
    // not mapped (Ubuntu 24.04's AppArmor restriction), this process must not be
    // left in one unmapped (it would be nobody to its own files)
    probe(flags, uid, gid)?;
    // SAFETY: the process is single-threaded here (a fresh exec of rwb).
    step(
        "no user namespace (unshare)",
        check(unsafe { libc::unshare(flags) }),
    )?;
    // from here on a failure leaves the process in the new namespaces, where the host
    // is still what it sees: it runs open, as said
    step("cannot map the user", map_user(uid, gid))?;
    step(
        "cannot make the mounts private",
        mount(
            None,
            Path::new("/"),
            None,
            libc::MS_REC | libc::MS_PRIVATE,
            None,
        ),
    )?;
    // the holes, held by descriptor: the host's folders, whatever covers their paths
    let holes: Vec<(std::fs::File, &PathBuf)> = writable
        .iter()
        .filter_map(|p| {
            let file = std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_PATH | libc::O_DIRECTORY)
                .open(p)
                .ok()?;
            Some((file, p))
        })
        .collect();
    // what lies in /tmp now, held by descriptor: bound back read-only over the layer
    let present: Vec<(std::fs::File, PathBuf)> = std::fs::read_dir("/tmp")
        .ok()
        .filter(|_| plan.tmp_read_only)
        .map(|entries| {
            let mut entries: Vec<std::fs::DirEntry> = entries.flatten().collect();
            // the plan's own folders first: they are bound back whatever the cap
            entries.sort_by_key(|e| !plan.first.iter().any(|f| f.starts_with(e.path())));
            entries
                .into_iter()
                .take(MAX_TMP_ENTRIES)
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir() || t.is_file()))
                .filter_map(|e| {
                    let file = std::fs::OpenOptions::new()
                        .read(true)
                        .custom_flags(libc::O_PATH | libc::O_NOFOLLOW)
                        .open(e.path())
                        .ok()?;
                    Some((file, e.path()))
                })
                .collect()
        })
        .unwrap_or_default();
    let private = private_tmpfs()?;
    let upper = private.join("upper");
    let work = private.join("work");
    for dir in [&upper, &work] {
        step(
            "cannot prepare the private folder",
            std::fs::create_dir_all(dir),
        )?;
    }
    let overlay = format!(
        "lowerdir=/tmp,upperdir={},workdir={}",
        upper.display(),
        work.display()
    );
    step(
        "cannot lay a private layer over /tmp",
        mount(
            Some(Path::new("overlay")),
            Path::new("/tmp"),
            Some("overlay"),
            0,
            Some(&overlay),
        ),
    )?;
    // From here on the mounts are changed: a failure can no longer fall back to an
    // open program (it would see a half-built box). What can be done without is
    // skipped; a hole that cannot be bound (the program could not work) ends here.
    let partly = read_only(&private).err();
    // binds take their source's flags: read-only by now. An entry removed from /tmp
    // since it was listed is gone: nothing to keep.
    for (file, path) in &present {
        let _ = bind_back(file, path);
    }
    drop(present);
    for (file, path) in &holes {
        // a bind takes its source's flags (read-only by now): made writable again
        let bound = bind_back(file, path).and_then(|()| {
            let kept = locked_flags(path).unwrap_or(0);
            mount(
                None,
                path,
                None,
                libc::MS_REMOUNT | libc::MS_BIND | kept,
                None,
            )
        });
        if let Err(e) = bound {
            eprintln!(
                "rwb {SUBCOMMAND}: cannot keep {} writable in the box: {e}",
                path.display()
            );
            std::process::exit(70);
        }
    }
    // the working folder, entered before the box was built, is looked up again
    // through the box's mounts (else relative paths bypass the holes bound over it)
    if let Ok(cwd) = std::env::current_dir() {
        let _ = std::env::set_current_dir(cwd);
    }
    match partly {
        // a mount that stayed writable: the box is not whole, and says so
        Some(why) => Err(format!("partly read-only ({why})")),
        None => Ok(()),
    }
}

use std::os::unix::fs::OpenOptionsExt;

/// Maps the calling process's user and group to root in its new user namespace.
fn map_user(uid: libc::uid_t, gid: libc::gid_t) -> std::io::Result<()> {
    std::fs::write("/proc/self/setgroups", "deny")?;
    std::fs::write("/proc/self/uid_map", format!("0 {uid} 1"))?;
    std::fs::write("/proc/self/gid_map", format!("0 {gid} 1"))
}

/// Whether a user namespace can be made with `flags` and mapped: tried in a child
/// process, which says why not through its exit status (2: the map; 3 + errno:
/// unshare).
fn probe(flags: libc::c_int, uid: libc::uid_t, gid: libc::gid_t) -> Result<(), String> {
    // SAFETY: single-threaded; the child only makes system calls and exits.
    let child = unsafe { libc::fork() };
    if child < 0 {
        return Err(format!("cannot fork: {}", std::io::Error::last_os_error()));
    }
    if child == 0 {
        let code = if unsafe { libc::unshare(flags) } != 0 {
            let errno = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
            3 + errno.clamp(0, 250)
        } else if map_user(uid, gid).is_err() {
            2
        } else {
            0
        };
        unsafe { libc::_exit(code) };
    }
    let mut status = 0;
    // SAFETY: waits for the child just forked.
    unsafe { libc::waitpid(child, &mut status, 0) };
    match libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status)) {
        Some(0) => Ok(()),
        Some(2) => Err("a user namespace cannot be mapped (uid_map refused)".into()),
        Some(code) if code >= 3 => Err(format!(
            "no user namespace (unshare): {}",
            std::io::Error::from_raw_os_error(code - 3)
        )),
        _ => Err("no user namespace (unshare): the probe did not finish".into()),
    }
}

/// Binds the host folder or file held by `file` (an `O_PATH` descriptor opened before
/// anything covered it) back over `path`.
fn bind_back(file: &std::fs::File, path: &Path) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let source = PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()));
    mount(
        Some(&source),
        path,
        None,
        libc::MS_BIND | libc::MS_REC,
        None,
    )
}

/// Mounts the box's private tmpfs on the first of the usual places that exists
/// (`/dev/shm` first: the box then also has a shared memory of its own) and returns
/// its folder for the `/tmp` layer.
fn private_tmpfs() -> Result<PathBuf, String> {
    let mut last = None;
    for place in ["/dev/shm", "/run", "/mnt", "/media"] {
        let place = Path::new(place);
        if !place.is_dir() {
            continue;
        }
        match mount(
            Some(Path::new("tmpfs")),
            place,
            Some("tmpfs"),
            libc::MS_NOSUID | libc::MS_NODEV,
            Some("mode=1777"),
        ) {
            Ok(()) => {
                let folder = place.join(".rwb-box");
                step(
                    "cannot prepare the private folder",
                    std::fs::create_dir_all(&folder),
                )?;
                return Ok(folder);
            }
            Err(e) => last = Some(format!("{}: {e}", place.display())),
        }
    }
    Err(format!(
        "no private tmpfs ({})",
        last.unwrap_or_else(|| "no /dev/shm, /run, /mnt or /media".into())
    ))
}

/// Remounts every mount read-only but the box's own (the private tmpfs and the `/tmp`
/// layer), keeping the flags the kernel locks in a user namespace. A mount hidden under
/// another cannot be reached by its path, and needs nothing; a pseudo filesystem that
/// refuses stays as it is (their files are not the host's data). Every mount is tried;
/// the first that stayed writable is the error.
fn read_only(private: &Path) -> Result<(), String> {
    let table = std::fs::read_to_string("/proc/self/mountinfo")
        .map_err(|e| format!("cannot read the mount table: {e}"))?;
    let private_root = private.parent().unwrap_or(private);
    let mut first = None;
    for line in table.lines() {
        let Some((point, fstype)) = mount_point(line) else {
            continue;
        };
        if point == private_root || point == Path::new("/tmp") {
            continue;
        }
        let Some(kept) = locked_flags(&point) else {
            continue;
        };
        let flags = libc::MS_REMOUNT | libc::MS_BIND | libc::MS_RDONLY | kept;
        if let Err(e) = mount(None, &point, None, flags, None) {
            if is_pseudo(&fstype) || e.raw_os_error() == Some(libc::ENOENT) {
                continue;
            }
            first.get_or_insert_with(|| format!("cannot make {} read-only: {e}", point.display()));
        }
    }
    first.map_or(Ok(()), Err)
}

/// The flags of the mount at `path` that a remount inside a user namespace must keep
/// (the kernel locks them), as mount(2) flags; `None` when it cannot be read.
fn locked_flags(path: &Path) -> Option<libc::c_ulong> {
    let c = c_path(path).ok()?;
    // SAFETY: statvfs writes into the zeroed struct it is given.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    Some(
        [
            (libc::ST_NOSUID, libc::MS_NOSUID),
            (libc::ST_NODEV, libc::MS_NODEV),
            (libc::ST_NOEXEC, libc::MS_NOEXEC),
            (libc::ST_NOATIME, libc::MS_NOATIME),
            (libc::ST_NODIRATIME, libc::MS_NODIRATIME),
            (libc::ST_RELATIME, libc::MS_RELATIME),
        ]
        .iter()
        .filter(|(st_flag, _)| st.f_flag & *st_flag != 0)
        .fold(0, |acc, (_, ms)| acc | ms),
    )
}

/// Filesystems whose files are the kernel's views, not data a reward could damage.
fn is_pseudo(fstype: &str) -> bool {
    matches!(
        fstype,
        "proc"
            | "sysfs"
            | "cgroup"
            | "cgroup2"
            | "devpts"
            | "mqueue"
            | "debugfs"
            | "tracefs"
            | "securityfs"
            | "pstore"
            | "bpf"
            | "configfs"
            | "fusectl"
            | "binfmt_misc"
            | "hugetlbfs"
            | "autofs"
            | "efivarfs"
            | "rpc_pipefs"
            | "nsfs"
    )
}

/// The mount point and filesystem type of a `/proc/self/mountinfo` line (octal escapes
/// in the path undone).
fn mount_point(line: &str) -> Option<(PathBuf, String)> {
    let mut fields = line.split(' ');
    let point = fields.nth(4)?;
    let rest: Vec<&str> = fields.collect();
    let dash = rest.iter().position(|f| *f == "-")?;
    let fstype = rest.get(dash + 1)?.to_string();
    Some((PathBuf::from(unescape(point)), fstype))
}

fn unescape(text: &str) -> OsString {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\'
            && i + 3 < bytes.len()
            && bytes[i + 1..i + 4]
                .iter()
                .all(|b| (b'0'..=b'7').contains(b))
        {
            let value =
                (bytes[i + 1] - b'0') * 64 + (bytes[i + 2] - b'0') * 8 + (bytes[i + 3] - b'0');
            out.push(value);
            i += 4;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    std::ffi::OsStr::from_bytes(&out).to_os_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_lines_give_their_point_and_type() {
        let line =
            "36 35 98:0 /mnt1 /mnt\\040two rw,noatime master:1 - ext3 /dev/root rw,errors=continue";
        assert_eq!(
            mount_point(line),
            Some((PathBuf::from("/mnt two"), "ext3".to_string()))
        );
        assert_eq!(mount_point("garbage"), None);
    }

    #[test]
    fn a_plan_goes_through_the_command_line_and_back() {
        let plan = Plan {
            writable: vec![PathBuf::from("/home/u/.cache")],
            network: false,
            tmp_read_only: true,
            first: Vec::new(),
            confine: true,
        };
        let args: Vec<OsString> = vec![
            serde_json::to_string(&plan).unwrap().into(),
            "--".into(),
            "python3".into(),
            "-c".into(),
        ];
        let (back, command) = parse(&args).unwrap();
        assert_eq!(back, plan);
        assert_eq!(
            command,
            vec![OsString::from("python3"), OsString::from("-c")]
        );
        assert!(parse(&args[..2]).unwrap_err().starts_with("usage"));
    }
}
