//! Where an evaluator runs, as the workbench's status line and `rwb run`'s summary
//! show it (SPEC §11): local workers, an HTTP endpoint, Fireworks, or a Ray cluster.

use super::{EvaluatorSpec, Source};

/// Where one evaluator's evaluations run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Placement {
    /// Forked local workers: `workers` slots, `concurrency` evaluations in flight each;
    /// `contained` when rwb boxes them in (SPEC §18), `None` when not known.
    Local {
        workers: usize,
        concurrency: usize,
        contained: Option<bool>,
    },
    /// A `generic_server`-compatible endpoint.
    Remote { url: String },
    /// A deployed Fireworks evaluator.
    Fireworks { id: String },
    /// Batches as tasks on a Ray cluster of `nodes` nodes.
    Ray { nodes: usize },
}

impl Placement {
    /// Where `spec` runs when local work has `workers` slots and the evaluator keeps
    /// `concurrency` in flight per worker (`None`: one).
    pub fn of(spec: &EvaluatorSpec, workers: usize, concurrency: Option<usize>) -> Placement {
        match &spec.source {
            Source::Remote { url, .. } => Placement::Remote { url: url.clone() },
            Source::Fireworks { id } => Placement::Fireworks { id: id.clone() },
            _ => Placement::Local {
                workers: workers.max(1),
                concurrency: concurrency.unwrap_or(1).max(1),
                contained: None,
            },
        }
    }

    /// Whether it scores somewhere else (no file here, nothing cached).
    pub fn is_remote(&self) -> bool {
        matches!(self, Placement::Remote { .. } | Placement::Fireworks { .. })
    }

    /// The whole label: `local ×2`, `local ×2, concurrency 8`, `remote URL`,
    /// `fireworks ID`, `ray (3 nodes)`.
    pub fn label(&self) -> String {
        match self {
            Placement::Remote { url } => format!("remote {url}"),
            _ => self.short(),
        }
    }

    /// The label with a URL cut to its host (and port).
    pub fn short(&self) -> String {
        match self {
            Placement::Local {
                workers,
                concurrency,
                ..
            } if *concurrency > 1 => format!("local ×{workers}, concurrency {concurrency}"),
            Placement::Local { workers, .. } => format!("local ×{workers}"),
            Placement::Remote { url } => format!("remote {}", host_of(url)),
            Placement::Fireworks { id } => format!("fireworks {id}"),
            Placement::Ray { nodes: 1 } => "ray (1 node)".to_string(),
            Placement::Ray { nodes } => format!("ray ({nodes} nodes)"),
        }
    }

    /// The whole label when it fits in `width` characters, else the short one.
    pub fn fit(&self, width: usize) -> String {
        let full = self.label();
        if full.chars().count() <= width {
            full
        } else {
            self.short()
        }
    }

    /// The status line's label: [`Placement::fit`], and for local workers whether
    /// they are `contained` or `open` (SPEC §18) when that is known.
    pub fn status(&self, width: usize) -> String {
        let word = match self {
            Placement::Local {
                contained: Some(true),
                ..
            } => " contained",
            Placement::Local {
                contained: Some(false),
                ..
            } => " open",
            _ => "",
        };
        let full = format!("{}{word}", self.label());
        if full.chars().count() <= width {
            full
        } else {
            format!("{}{word}", self.short())
        }
    }
}

/// `host:port` of a URL (what is between `://` and the path).
fn host_of(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    &rest[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_say_where_and_how_many() {
        let local = |workers, concurrency| Placement::Local {
            workers,
            concurrency,
            contained: None,
        };
        assert_eq!(local(2, 1).label(), "local ×2");
        assert_eq!(local(4, 8).label(), "local ×4, concurrency 8");
        let boxed = |contained| Placement::Local {
            workers: 2,
            concurrency: 1,
            contained,
        };
        assert_eq!(boxed(Some(true)).status(40), "local ×2 contained");
        assert_eq!(boxed(Some(false)).status(40), "local ×2 open");
        assert_eq!(boxed(None).status(40), "local ×2");
        assert_eq!(
            boxed(Some(true)).label(),
            "local ×2",
            "the run summary is as it was"
        );
        let remote = Placement::Remote {
            url: "https://judge.example.com:8443/evaluate?x=1".into(),
        };
        assert_eq!(
            remote.label(),
            "remote https://judge.example.com:8443/evaluate?x=1"
        );
        assert_eq!(remote.short(), "remote judge.example.com:8443");
        assert_eq!(remote.fit(60), remote.label());
        assert_eq!(remote.fit(20), "remote judge.example.com:8443");
        let fw = Placement::Fireworks { id: "prod".into() };
        assert_eq!(fw.label(), "fireworks prod");
        assert_eq!(Placement::Ray { nodes: 1 }.label(), "ray (1 node)");
        assert_eq!(Placement::Ray { nodes: 3 }.label(), "ray (3 nodes)");
    }
}
