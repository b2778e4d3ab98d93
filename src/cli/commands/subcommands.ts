// The `get` and `describe` subcommands every kind's command has, built alike so their arguments,
// flags and help read the same for backups, restores, schedules and locations.
import { Command } from 'commander';
import { action, type Session } from './action.js';
import { addGlobalOptions } from './kubeContext.js';
import { outputOption } from './output.js';

type Run = (cmd: Command, s: Session) => Promise<void>;
/** Adds a kind's own flags after the shared ones (and before the global ones, as help lists them). */
type More = (cmd: Command) => Command;

/** `get [names...]`: lists the kind's objects (`listed`), or shows the named ones; -o and -l. */
export function getSubcommand(o: { listed: string; plural: string; selectorHelp: string; run: Run; more?: More }): Command {
  const cmd = new Command('get')
    .description(`List ${o.listed}, or show the named ones`)
    .argument('[names...]', `${o.plural} to show (default: all)`)
    .addOption(outputOption())
    .option('-l, --selector <selector>', o.selectorHelp);
  return addGlobalOptions(o.more === undefined ? cmd : o.more(cmd)).action(action(o.run));
}

/** `describe [names...]`; `more` adds the kind's flags (by default just -o). */
export function describeSubcommand(o: { description: string; plural: string; run: Run; more?: More }): Command {
  const cmd = new Command('describe').description(o.description).argument('[names...]', `${o.plural} to describe (default: all)`);
  return addGlobalOptions((o.more ?? ((c: Command) => c.addOption(outputOption())))(cmd)).action(action(o.run));
}
