//! A diagnosis aid for a run that never ends (issue 24): in a build made with
//! `RUSTFLAGS="--cfg tokio_unstable" cargo build --features task-dump`, setting
//! `RWB_TASK_DUMP_AFTER=SECONDS` makes rwb write, once that long has passed, where every
//! task of its async runtime is waiting (an async backtrace per task) to
//! `RWB_TASK_DUMP_FILE`, or to stderr. gdb shows threads, which for a lost wake-up are
//! all asleep; this shows which `.await` each task sleeps in. Ordinary builds hold none
//! of it.

#[cfg(all(tokio_unstable, feature = "task-dump"))]
pub(super) fn watch(handle: tokio::runtime::Handle) {
    let Some(after) = std::env::var("RWB_TASK_DUMP_AFTER")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .and_then(|s| std::time::Duration::try_from_secs_f64(s).ok())
    else {
        return;
    };
    let _ = std::thread::Builder::new()
        .name("rwb-task-dump".into())
        .spawn(move || {
            std::thread::sleep(after);
            let dump = handle.block_on(async {
                tokio::time::timeout(std::time::Duration::from_secs(10), handle.dump()).await
            });
            let mut text = String::new();
            match dump {
                Ok(dump) => {
                    for (i, task) in dump.tasks().iter().enumerate() {
                        text.push_str(&format!("=== task {i} ({:?}) ===\n", task.id()));
                        text.push_str(&task.trace().to_string());
                        text.push('\n');
                    }
                }
                Err(_) => text.push_str("the runtime did not answer the dump within 10 s\n"),
            }
            match std::env::var_os("RWB_TASK_DUMP_FILE") {
                Some(path) => {
                    let _ = std::fs::write(path, text);
                }
                None => eprintln!("{text}"),
            }
        });
}

#[cfg(not(all(tokio_unstable, feature = "task-dump")))]
pub(super) fn watch(_handle: tokio::runtime::Handle) {}
