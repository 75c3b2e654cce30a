package cuda

import (
	"fmt"

	"github.com/meazo-go/meazo/tensor"
)

// Options configures a CUDA backend. The zero value is the default, which
// was measured to be the fastest (docs/BACKENDS.md); the other settings are
// for benchmarks and tests, and reach a backend opened by name through
// tensor.Options (and tensor.EnvOptions).
type Options struct {
	// Device is the GPU ordinal (0: the first visible one).
	Device int
	// StackProjections has the model multiply q|k|v and gate|up as one
	// product each (tensor.Stacker). cuBLAS runs Qwen3-0.6B's stacked q|k|v
	// 30 % faster than apart at 1024 rows, but with the copies that split
	// the product the model on an H100 was up to 9 % slower or 6 % faster
	// by shape (docs/PERFORMANCE.md), so it is off by default.
	StackProjections bool
	// Attention forces one attention path wherever it can run: "rows"
	// (attention alone, a block per query), "tiled" (attention_tiled) or
	// "gemm" (attentionGEMM); "" or "auto": the default choice by length
	// and head width (see Backend.tiledMinHD and gemmMinKeys). For a ViT's
	// EncoderAttention, "gemm" forces the batched GEMMs
	// (encoderAttentionGEMM), "rows" and "tiled" the exact kernel
	// encoder_attention, and "auto" takes the GEMMs from 64 tokens
	// (Backend.encGEMMMinTokens).
	Attention string
	// AttentionChunk is how many queries attentionGEMM takes at a time
	// (0: defaultAttnChunk; tensor.AllQueries: all at once).
	AttentionChunk int
	// SyncUploads turns the staged asynchronous uploads off (gpu.go's
	// staging), for comparison or to rule them out.
	SyncUploads bool
	// BF16Products multiplies by bfloat16-stored weights on the tensor
	// cores (matmul.go's productBF16): what a bfloat16 model of 14
	// billion weights needs to run at PyTorch's bfloat16 speed, at the
	// cost of activations rounded to bfloat16 at each such product. It is
	// for frozen weights (LoRA, prompt tuning): full-parameter ZO's
	// perturbed products (MatMulPerturbed) stay float32, so with it a
	// clean pass (FZOO's, validation) would multiply otherwise than a
	// perturbed one; leave it off for full-parameter training.
	BF16Products bool
	// PairedProducts multiplies a direction's + and − variants' rows by
	// their matrices in one cublasSgemmBatched of two (trainer.go's
	// pairedProduct) instead of two cublasSgemm calls: full-parameter ZO at
	// small batches, where one variant's product leaves much of the GPU
	// idle. Off until measured on a GPU.
	PairedProducts bool
	// TF32x3 multiplies float32 matrices on Hopper's tensor cores where
	// fits3xTF32 and split3xTF32 allow (kernels_sm90a/gemm_3xtf32.cu):
	// operands split into two TF32 parts, the tensor cores' sums added to a
	// float32 sum every 32 terms. Opening a backend with it fails on GPUs
	// other than Hopper; the kernel emulator runs it with a model of the
	// tensor cores' arithmetic. Off by default until compute-sanitizer's
	// racecheck and synccheck have run on it (docs/BACKENDS.md).
	TF32x3 bool
	// TF32x3Auto is TF32x3 on a Hopper GPU and nothing on others (a study
	// on a mixed cluster): not with TF32x3.
	TF32x3Auto bool
	// TF32x3AllShapes gives gemm_3xtf32 every product fits3xTF32 allows,
	// unsplit, not only those whose grid fills the GPU, split or not
	// (split3xTF32): to measure the rule.
	TF32x3AllShapes bool
}

// optionsOf takes the CUDA backend's settings from o.
func optionsOf(o tensor.Options) Options {
	return Options{Device: o.Device, StackProjections: o.StackProjections, Attention: o.Attention,
		AttentionChunk: o.AttentionChunk, SyncUploads: o.SyncUploads, BF16Products: o.BF16Products,
		PairedProducts: o.PairedProducts, TF32x3: o.TF32x3, TF32x3Auto: o.TF32x3Auto, TF32x3AllShapes: o.TF32x3AllShapes}
}

// defaultAttnChunk is attnChunk's default. Measured on an H200
// (docs/PERFORMANCE.md): chunks of 128 queries took Qwen3-0.6B's forward
// 1-4 % below one chunk at 8×300 and 8×512, 64 a little less; Llama-3.2-1B's
// within 1 %.
const defaultAttnChunk = 128

// attentionPaths returns the backend's tiledMinHD, gemmMinKeys and
// encGEMMMinTokens for Options.Attention. By default attentionGEMM runs
// from 256 slots, below that attention_tiled for heads of 128 and attention
// for the others; the encoder's GEMMs from defaultEncGEMMMinTokens tokens,
// the exact encoder_attention below.
func attentionPaths(kernel string) (tiledMinHD, gemmMinKeys, encGEMMMinTokens int, err error) {
	switch kernel {
	case "", "auto":
		return 128, 256, defaultEncGEMMMinTokens, nil
	case "rows":
		return 0, 0, 0, nil
	case "tiled":
		return 1, 0, 0, nil
	case "gemm":
		return 128, 1, 1, nil
	}
	return 0, 0, 0, fmt.Errorf("cuda: attention kernel %q: want rows, tiled, gemm or auto", kernel)
}

// attnChunkOf returns the backend's attnChunk for Options.AttentionChunk.
func attnChunkOf(c int) (int, error) {
	switch {
	case c == 0:
		return defaultAttnChunk, nil
	case c == tensor.AllQueries:
		return 0, nil
	case c < 0:
		return 0, fmt.Errorf("cuda: attention chunks of %d queries", c)
	}
	return c, nil
}

// check reports an option that has no meaning.
func (o Options) check() error {
	if _, _, _, err := attentionPaths(o.Attention); err != nil {
		return err
	}
	if o.TF32x3AllShapes && !o.TF32x3 {
		return fmt.Errorf("cuda: TF32x3AllShapes without TF32x3")
	}
	if o.TF32x3 && o.TF32x3Auto {
		return fmt.Errorf("cuda: TF32x3 and TF32x3Auto: one or the other")
	}
	_, err := attnChunkOf(o.AttentionChunk)
	return err
}

// settings names the options that change the bits, in the words of the
// environment variables that set them outside tests (tensor.EnvOptions),
// and for BF16Products of the config key that sets it too
// (model.bf16_products): they go into the backend's description and its
// Arithmetic (docs/BACKENDS.md), which do not depend on which of the two
// set it (the same numbers either way).
func (o Options) settings() string {
	var s string
	if o.Attention == "rows" || o.Attention == "tiled" || o.Attention == "gemm" {
		s += "; attention kernel: " + o.Attention + " (MEAZO_CUDA_ATTENTION)"
	}
	if o.StackProjections {
		s += "; projections stacked (MEAZO_CUDA_STACK)"
	}
	if o.BF16Products {
		s += "; bfloat16 weights multiplied in bfloat16 on the tensor cores (model.bf16_products or MEAZO_CUDA_BF16_PRODUCTS)"
	}
	if o.PairedProducts {
		s += "; a direction's perturbed products paired (MEAZO_CUDA_PAIRED)"
	}
	if o.TF32x3 && o.TF32x3AllShapes {
		s += "; float32 products as 3xTF32 on the tensor cores, every shape (MEAZO_CUDA_3XTF32=all)"
	} else if o.TF32x3 {
		s += "; float32 products as 3xTF32 on the tensor cores where their grid fills the GPU (MEAZO_CUDA_3XTF32)"
	}
	if o.AttentionChunk != 0 {
		s += fmt.Sprintf("; attention chunks of %d queries (MEAZO_CUDA_ATTN_CHUNK)", max(o.AttentionChunk, 0))
	}
	return s
}
