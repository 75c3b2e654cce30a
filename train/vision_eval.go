package train

import (
	"fmt"
	"io"
	"time"

	"github.com/meazo-go/meazo/data"
	"github.com/meazo-go/meazo/imageproc"
	"github.com/meazo-go/meazo/lora"
	"github.com/meazo-go/meazo/model"
)

// EvaluateImages computes an image task's test accuracy for m, with the
// saved ViT adapter o.Adapter if one is named (m as it is otherwise), as
// meazo-train does at the end of a run: the images of the Parquet file
// o.Data (its first o.MaxExamples), preprocessed as the checkpoint's
// preprocessor_config.json says (proc), in batches of o.BatchSize. The
// images are decoded a chunk at a time on o.Threads workers, so memory
// holds the file's encoded bytes and one chunk of decoded images, not the
// whole split decoded. With o.Merge the adapter is merged into a copy of
// m's weights first (lora.MergeViT), as eval.merge. The result is {"accuracy"} in 0–1, as a run's
// summary.json reports it; o.OnPrediction, if set, is handed each image's
// Prediction in the file's order.
func EvaluateImages(m *model.ViT, proc imageproc.Config, o EvalOptions) (map[string]float64, error) {
	if data.Task(o.Task) != data.Pets {
		return nil, fmt.Errorf("task %q is not an image task (pets is)", o.Task)
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.BatchSize <= 0 {
		o.BatchSize = 8
	}
	if err := proc.CheckSide(m.Config.ImageSize); err != nil {
		return nil, err
	}
	if o.Adapter != "" {
		if err := AttachViTAdapter(o.Adapter, m); err != nil {
			return nil, err
		}
		// m itself, not the merged copy that takes its place below.
		defer func(base *model.ViT) { base.Adapter = nil }(m)
		if o.Merge { // a merged copy, as eval.merge scores a run's adapters (lora.MergeViT)
			merged := lora.MergeViT(m, m.Adapter)
			defer lora.FreeMergedViT(merged, m)
			m = merged
		}
	}
	rows, err := data.ReadImageParquet(o.Data, m.Config.NumLabels)
	if err != nil {
		return nil, err
	}
	warnShards(o.Log, "--data", o.Data)
	src := imageSource{key: "--data", path: o.Data, rows: rows, index: firstRows(len(rows))}
	src.cut(o.MaxExamples)
	n := len(src.rows)
	if n == 0 {
		return nil, fmt.Errorf("%s: no images", o.Data)
	}
	fmt.Fprintf(o.Log, "evaluating on %d images of %s\n", n, o.Data)
	start := time.Now()
	v := &vision{vit: m, proc: proc}
	pass := newEvalPass("evaluation", n, func(s string) { fmt.Fprintln(o.Log, s) }, nil)
	correct := 0
	for lo := 0; lo < n; lo += decodeChunk {
		hi := min(lo+decodeChunk, n)
		chunk := imageSource{key: src.key, path: src.path, rows: src.rows[lo:hi], index: src.index[lo:hi]}
		imgs, err := chunk.decode(proc, m.Config.ImageSize, o.Threads, func() error { return nil })
		if err != nil {
			return nil, err
		}
		for b := 0; b < len(imgs); b += o.BatchSize {
			batch := imgs[b:min(b+o.BatchSize, len(imgs))]
			px, labels, err := pixels(proc, batch)
			if err != nil {
				return nil, err
			}
			preds, err := v.predict(px, len(labels), "test", lo+b)
			if err != nil {
				return nil, err
			}
			for i, label := range labels {
				if preds[i] == label {
					correct++
				}
				if o.OnPrediction != nil {
					row := chunk.index[b+i]
					o.OnPrediction(labelledPrediction(chunk.rows[b+i].ID, Input{Image: &row}, preds[i], label, nil))
				}
			}
			if err := pass.after(lo+b+len(batch), false); err != nil {
				return nil, err
			}
		}
	}
	res := map[string]float64{"accuracy": float64(correct) / float64(n)}
	fmt.Fprintf(o.Log, "test (evaluation, %d examples, %.0fs): %s\n", n, time.Since(start).Seconds(), FormatMetrics(res))
	return res, nil
}
