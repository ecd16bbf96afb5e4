//! The evaluation engine: Python worker processes and the protocol to them.
//!
//! Owns the fork-server ("zygote") of one interpreter, the evaluator workers it forks,
//! per-evaluation timeouts and crash handling, and the worker pool that schedules
//! batches over `--jobs` CPU slots. The Python that runs there lives in `python/`
//! and is embedded into the binary.
//!
//! Must not: draw, serve HTTP, read samples files or touch the cache. It takes raw
//! sample lines and gives back [`Outcome`](crate::model::Outcome)s.

pub mod chat_template;
mod code_dir;
pub(crate) mod marshal;
mod pool;
mod protocol;
mod ray;
mod worker;
mod zygote;

pub use pool::{spawn_error, BatchDone, Pool, PoolJob, PoolWork, Sink};
pub use protocol::{CallArg, Dist, ThirdParty};
pub use ray::RayInfo;
pub use worker::{Loaded, Next, Worker};
pub use zygote::{Engine, EngineError, ZygoteInfo};

/// The Python files embedded into the binary, written to the folder workers read
/// them from (see [`code_dir`]). Paths are relative to that folder.
pub const PYTHON_FILES: &[(&str, &str)] = &[
    ("rwb_worker.py", include_str!("python/rwb_worker.py")),
    (
        "rwb_py/__init__.py",
        include_str!("python/rwb_py/__init__.py"),
    ),
    ("rwb_py/asyncs.py", include_str!("python/rwb_py/asyncs.py")),
    ("rwb_py/checks.py", include_str!("python/rwb_py/checks.py")),
    ("rwb_py/audit.py", include_str!("python/rwb_py/audit.py")),
    (
        "rwb_py/swallowed.py",
        include_str!("python/rwb_py/swallowed.py"),
    ),
    (
        "rwb_py/concurrent.py",
        include_str!("python/rwb_py/concurrent.py"),
    ),
    ("rwb_py/errors.py", include_str!("python/rwb_py/errors.py")),
    (
        "rwb_py/imports.py",
        include_str!("python/rwb_py/imports.py"),
    ),
    (
        "rwb_py/graders.py",
        include_str!("python/rwb_py/graders.py"),
    ),
    ("rwb_py/load.py", include_str!("python/rwb_py/load.py")),
    ("rwb_py/output.py", include_str!("python/rwb_py/output.py")),
    ("rwb_py/paths.py", include_str!("python/rwb_py/paths.py")),
    (
        "rwb_py/results.py",
        include_str!("python/rwb_py/results.py"),
    ),
    (
        "rwb_py/timeouts.py",
        include_str!("python/rwb_py/timeouts.py"),
    ),
    ("rwb_py/tally.py", include_str!("python/rwb_py/tally.py")),
    ("rwb_py/wire.py", include_str!("python/rwb_py/wire.py")),
    ("rwb_py/worker.py", include_str!("python/rwb_py/worker.py")),
    ("rwb_py/zygote.py", include_str!("python/rwb_py/zygote.py")),
    (
        "rwb_py/styles/__init__.py",
        include_str!("python/rwb_py/styles/__init__.py"),
    ),
    (
        "rwb_py/styles/batch.py",
        include_str!("python/rwb_py/styles/batch.py"),
    ),
    (
        "rwb_py/styles/calling.py",
        include_str!("python/rwb_py/styles/calling.py"),
    ),
    (
        "rwb_py/styles/described.py",
        include_str!("python/rwb_py/styles/described.py"),
    ),
    (
        "rwb_py/styles/frameworks.py",
        include_str!("python/rwb_py/styles/frameworks.py"),
    ),
    (
        "rwb_py/styles/presets.py",
        include_str!("python/rwb_py/styles/presets.py"),
    ),
    (
        "rwb_py/styles/task.py",
        include_str!("python/rwb_py/styles/task.py"),
    ),
    (
        "rwb_py/styles/openrlhf.py",
        include_str!("python/rwb_py/styles/openrlhf.py"),
    ),
    (
        "rwb_py/styles/tunix.py",
        include_str!("python/rwb_py/styles/tunix.py"),
    ),
    (
        "rwb_py/styles/reward_kit.py",
        include_str!("python/rwb_py/styles/reward_kit.py"),
    ),
    (
        "rwb_py/styles/samples.py",
        include_str!("python/rwb_py/styles/samples.py"),
    ),
    (
        "rwb_py/styles/simple.py",
        include_str!("python/rwb_py/styles/simple.py"),
    ),
    (
        "rwb_py/styles/trl.py",
        include_str!("python/rwb_py/styles/trl.py"),
    ),
    (
        "rwb_py/styles/verifiers.py",
        include_str!("python/rwb_py/styles/verifiers.py"),
    ),
    (
        "rwb_py/styles/verl.py",
        include_str!("python/rwb_py/styles/verl.py"),
    ),
    ("rwb_ray.py", include_str!("python/rwb_ray.py")),
    ("rwb_ray_task.py", include_str!("python/rwb_ray_task.py")),
    (
        "rwb_sandbox_server.py",
        include_str!("python/rwb_sandbox_server.py"),
    ),
    (
        "compat/rwb/__init__.py",
        include_str!("python/rwb/__init__.py"),
    ),
    (
        "compat/rwb/sandbox.py",
        include_str!("python/rwb/sandbox.py"),
    ),
    (
        "standins/e2b/__init__.py",
        include_str!("python/standins/e2b/__init__.py"),
    ),
    (
        "standins/e2b-1.0.0+rwb.dist-info/METADATA",
        include_str!("python/standins/e2b-1.0.0+rwb.dist-info/METADATA"),
    ),
    (
        "standins/e2b_code_interpreter/__init__.py",
        include_str!("python/standins/e2b_code_interpreter/__init__.py"),
    ),
    (
        "standins/e2b_code_interpreter/models.py",
        include_str!("python/standins/e2b_code_interpreter/models.py"),
    ),
    (
        "compat/reward_kit/__init__.py",
        include_str!("python/reward_kit/__init__.py"),
    ),
    (
        "compat/reward_kit/models.py",
        include_str!("python/reward_kit/models.py"),
    ),
    (
        "compat/reward_kit/reward_function.py",
        include_str!("python/reward_kit/reward_function.py"),
    ),
    (
        "compat/reward_kit/typed_interface.py",
        include_str!("python/reward_kit/typed_interface.py"),
    ),
    (
        "compat/reward_kit/rewards/__init__.py",
        include_str!("python/reward_kit/rewards/__init__.py"),
    ),
];
