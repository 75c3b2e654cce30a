// Package data turns the files users have into the paper's supervised,
// chat-formatted training examples (docs/ALGORITHMS.md's data protocol):
//
//   - read.go and the format files load SST-2, SQuAD v1.1 and XSum, streaming,
//     from HF hub Parquet, GLUE TSV, the official SQuAD JSON and JSON Lines;
//     a malformed row is reported with file, row and field and skipped unless
//     the caller asks for strictness. own.go reads the tasks on the user's
//     own data (classification, generation) from JSON Lines.
//   - split.go draws the paper's splits with a documented seeded permutation.
//   - chat.go builds the paper's conversations (Boxes 1–3), and the user's
//     (the config's instruction, the row's text, its label or completion);
//     encode.go renders them with the model's chat template, marks which
//     tokens are trained and renders every label of an example for scoring.
//   - batch.go pads batches (right for training, left for generation) and
//     sampler.go draws them in a seeded order that can resume mid-epoch.
package data
