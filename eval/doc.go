// Package eval computes the paper's test metrics exactly as the official
// implementations do: SQuAD v1.1 exact match and F1 (evaluate-v1.1.py),
// ROUGE-1/2/L/Lsum (google-research rouge_score, optionally with NLTK's Porter
// stemmer in NLTK_EXTENSIONS mode), SST-2 label scoring from log-probabilities,
// and extraction of the answer from a generated assistant turn.
//
// The official code is Python; where Python's string semantics differ from
// Go's (Unicode lower(), \b, str.split()) this package reproduces Python's.
// pystr.go holds those string helpers.
package eval
