// The last lines a plugin wrote to stderr, quoted in errors when it fails to start or crash-loops.

export class LineTail {
  private readonly lines: string[] = [];
  constructor(private readonly max = 20) {}

  push(line: string): void {
    this.lines.push(line.length > 2000 ? `${line.slice(0, 2000)}...` : line);
    if (this.lines.length > this.max) this.lines.shift();
  }

  get(): string[] {
    return [...this.lines];
  }

  /** A block for an error message: "last stderr lines:\n  a\n  b", or a note that there were none. */
  describe(): string {
    if (this.lines.length === 0) return 'it wrote nothing to stderr';
    return `its last stderr lines:\n${this.lines.map((l) => `  ${l}`).join('\n')}`;
  }
}
