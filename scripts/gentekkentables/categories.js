// Prints, as JSON, the code points in tekken's two letter classes by Node's
// ICU regex tables: upper = [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}],
// lower = [\p{Ll}\p{Lm}\p{Lo}\p{M}], as inclusive [lo, hi] ranges.
// Input of scripts/gentekkentables (see there).
const classes = { upper: /^[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]$/u, lower: /^[\p{Ll}\p{Lm}\p{Lo}\p{M}]$/u };
const out = { unicode: process.versions.unicode };
for (const [name, re] of Object.entries(classes)) {
  const ranges = [];
  for (let c = 0; c <= 0x10ffff; c++) {
    if (c >= 0xd800 && c <= 0xdfff) continue;
    if (!re.test(String.fromCodePoint(c))) continue;
    const last = ranges[ranges.length - 1];
    if (last && last[1] === c - 1) last[1] = c; else ranges.push([c, c]);
  }
  out[name] = ranges;
}
console.log(JSON.stringify(out));
