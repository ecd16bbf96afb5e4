//! Python pickles are never opened (SPEC §13): unpickling runs whatever code the file
//! holds. They are told by their first bytes — a pickle of protocol 2 or later starts
//! with the PROTO opcode `0x80` and its protocol number; `torch.save` writes a zip
//! whose `…/data.pkl` entry is the pickle — and answered with the few lines of Python
//! that export one to JSONL with the user's own interpreter.
//!
//! The two dumps users meet: slime's `--save-debug-rollout-data`
//! (`save_debug_rollout_data`, THUDM/slime@624b824a `slime/observability/rollout_data_utils.py:140-153`:
//! `torch.save({"rollout_id": id, "samples": [Sample.to_dict(), ...]}, path)`) and
//! SkyRL's training batches (`TrainingInputBatch.save`, NovaSky-AI/SkyRL@a9564572
//! `skyrl/backends/skyrl_train/training_batch.py:396-398`: `pickle.dump(self, f)`,
//! token tensors only: the text is SkyRL's `dumped_evals`).

use std::path::Path;

/// Whether the first bytes of a file are a pickle's (protocol 2 to 5).
pub fn is_pickle(head: &[u8]) -> bool {
    head.len() >= 2 && head[0] == 0x80 && (2..=5).contains(&head[1])
}

/// Whether a zip's entry names are `torch.save`'s (`archive/data.pkl`).
pub fn is_torch_zip(entries: &[String]) -> bool {
    entries
        .iter()
        .any(|e| e == "data.pkl" || e.ends_with("/data.pkl"))
}

/// The message for a pickle at `path`: why rwb does not open it, and how to export it.
pub fn refusal(path: &Path, torch: bool) -> String {
    let shown = path.display();
    let out = path.with_extension("jsonl");
    let out = out.display();
    let how = if torch {
        format!(
            "python - <<'EOF'\nimport json, torch\ndump = torch.load(\"{shown}\", weights_only=False)  # slime: {{\"rollout_id\", \"samples\"}}\nwith open(\"{out}\", \"w\") as f:\n    for s in dump[\"samples\"]:\n        f.write(json.dumps({{\"prompt\": s[\"prompt\"], \"completion\": s[\"response\"], \"ground_truth\": s.get(\"label\"), \"reward\": s.get(\"reward\"), \"step\": dump[\"rollout_id\"]}}, default=str) + \"\\n\")\nEOF"
        )
    } else {
        format!(
            "python - <<'EOF'\nimport json, pickle\nfrom transformers import AutoTokenizer\ntok = AutoTokenizer.from_pretrained(\"YOUR_MODEL\")\nbatch = pickle.load(open(\"{shown}\", \"rb\"))  # SkyRL: a TrainingInputBatch of token tensors\nwith open(\"{out}\", \"w\") as f:\n    for ids, mask in zip(batch[\"sequences\"], batch[\"attention_mask\"]):\n        f.write(json.dumps({{\"prompt\": \"\", \"completion\": tok.decode(ids[mask.bool()])}}) + \"\\n\")\nEOF\n(SkyRL's dumped_evals/*.jsonl hold the text already: give rwb those)"
        )
    };
    format!(
        "{shown}: a Python pickle{}; rwb never unpickles a file (loading one runs any code it holds). If you trust it, export it to JSONL with your own Python and give rwb the .jsonl:\n{how}",
        if torch { " (torch.save)" } else { "" }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pickles_are_told_by_their_protocol_byte_and_torch_zips_by_data_pkl() {
        assert!(is_pickle(&[0x80, 4, 0x95]));
        assert!(is_pickle(&[0x80, 2]));
        assert!(!is_pickle(&[0x80, 9]));
        assert!(!is_pickle(b"{\"a\": 1}"));
        assert!(is_torch_zip(&[
            "archive/data.pkl".into(),
            "archive/version".into()
        ]));
        assert!(!is_torch_zip(&["header.json".into()]));
        let m = refusal(Path::new("dump/rollout_3.pt"), true);
        assert!(
            m.starts_with("dump/rollout_3.pt: a Python pickle (torch.save); rwb never unpickles")
        );
        assert!(m.contains("torch.load(\"dump/rollout_3.pt\", weights_only=False)"));
        assert!(m.contains("open(\"dump/rollout_3.jsonl\", \"w\")"));
    }
}
