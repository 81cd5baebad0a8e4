// The README's tested code blocks: every fenced block whose info string carries
// `readme-test=<name>` (```js readme-test=publish.mjs), by name, exactly as written. GitHub shows
// the language (the first word) and ignores the rest. Run by scripts/scratch.mjs --smoke.
export function readmeBlocks(markdown) {
  const blocks = new Map();
  for (const m of markdown.matchAll(/^```(\w+) readme-test=(\S+)\n([\s\S]*?)^```$/gm)) {
    if (blocks.has(m[2])) throw new Error(`README: two blocks named ${m[2]}`);
    blocks.set(m[2], m[3]);
  }
  return blocks;
}
