package main

// The example configs of "Your own data" (README.md): Qwen3-0.6B's LoRA
// with MEAZO at the paper's settings on a classification and a generation
// task of the user's own JSON Lines files, which config writes with the
// task's extra keys (ownTaskKeys) under a comment saying what the files
// hold.

// ownTasks are the example tasks, in the order of the README.
var ownTasks = []string{"classification", "generation"}

// ownFiles are the example data files: train, validation ("" = 5% of train), test.
var ownFiles = map[string][3]string{
	"classification": {"data/mine/reviews_train.jsonl", "", "data/mine/reviews_test.jsonl"},
	"generation":     {"data/mine/qa_train.jsonl", "", "data/mine/qa_test.jsonl"},
}

// ownTaskKeys are the task section's keys beyond name and files.
var ownTaskKeys = map[string]string{
	"classification": "  labels: [negative, neutral, positive]\n" +
		"  instruction: \"Classify the sentiment of the review. Answer negative, neutral or positive.\"\n",
	"generation": "  instruction: \"Answer the question in a few words.\"\n",
}

// ownComments say what each example's files hold.
var ownComments = map[string]string{
	"classification": `# Your own data (README.md, "Your own data"): a classification of your texts. Each line of the .jsonl files
# is {"text": "...", "label": "positive"} (the label one of task.labels, or its 0-based index; "id" optional).
# Without task.validation, 5% of the train file is held out (task.data_seed). The test file is scored as SST-2:
# the label whose answer the model finds likeliest, accuracy. Sweep the rate on your data (docs/SWEEPS.md).
`,
	"generation": `# Your own data (README.md, "Your own data"): a generation task. Each line of the .jsonl files is
# {"prompt": "...", "completion": "..."} ("id" optional; "references": [...] more answers scored as right).
# Without task.validation, 5% of the train file is held out (task.data_seed). The test file is scored by
# greedy generation (eval.max_new_tokens, default 100): SQuAD's exact_match and f1 and XSum's ROUGE.
`,
}

// addOwnData adds the example configs.
func addOwnData(files map[string]string) {
	for _, task := range ownTasks {
		name := models[1].short + "_" + task + "_lora_meazo.yaml"
		files[name] = ownComments[task] + config(models[1], task, "lora", "meazo", false)
	}
}

// taskFiles are the data files of a paper task or of an example of the
// user's own.
func taskFiles(task string) [3]string {
	if f, ok := ownFiles[task]; ok {
		return f
	}
	return tasks[task]
}
