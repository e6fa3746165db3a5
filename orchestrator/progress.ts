// Progress for long operations, on stderr: a live elapsed-time line on a terminal,
// plain start/end lines otherwise (CI logs, pipes).

export interface Step {
  /** Update the detail shown after the step's title (e.g. "3/7 tasks"). */
  update(detail: string): void;
  done(detail?: string): void;
  fail(detail?: string): void;
}

export interface Progress {
  step(title: string): Step;
  info(line: string): void;
}

export function createProgress(opts: { stream?: NodeJS.WriteStream; quiet?: boolean } = {}): Progress {
  const out = opts.stream ?? process.stderr;
  const tty = Boolean(out.isTTY) && !process.env.CI && !process.env.NO_COLOR;
  const write = (s: string) => {
    if (!opts.quiet) out.write(s);
  };
  return {
    info: (line) => write(`${line}\n`),
    step(title) {
      const started = Date.now();
      let detail = '';
      const secs = () => ((Date.now() - started) / 1000).toFixed(1);
      const frames = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
      let frame = 0;
      let timer: NodeJS.Timeout | undefined;
      if (tty) {
        timer = setInterval(() => {
          write(`\r\x1b[2K${frames[frame++ % frames.length]} ${title}${detail ? ` — ${detail}` : ''} (${secs()} s)`);
        }, 100);
        timer.unref();
      } else {
        write(`… ${title}\n`);
      }
      const end = (mark: string, d?: string) => {
        if (timer) clearInterval(timer);
        const text = `${mark} ${title}${d ? ` — ${d}` : ''} (${secs()} s)\n`;
        write(tty ? `\r\x1b[2K${text}` : text);
      };
      return {
        update: (d) => {
          detail = d;
        },
        done: (d) => end('✔', d ?? detail),
        fail: (d) => end('✖', d ?? detail),
      };
    },
  };
}

/** Run fn as one progress step; the step fails (and rethrows) if fn throws. */
export async function withStep<T>(progress: Progress, title: string, fn: (step: Step) => Promise<T>): Promise<T> {
  const step = progress.step(title);
  try {
    const result = await fn(step);
    step.done();
    return result;
  } catch (e) {
    step.fail();
    throw e;
  }
}
