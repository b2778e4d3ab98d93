// Listen addresses in Go's form: ":8085", "127.0.0.1:8085", "[::1]:8085".

export interface ListenAddress {
  /** undefined means every interface. */
  host: string | undefined;
  port: number;
}

/** Parses a listen address; throws naming `what` when it is malformed. */
export function parseListenAddress(text: string, what = 'address'): ListenAddress {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:\s[\]]*)):(\d{1,5})$/.exec(text.trim());
  const port = m ? Number(m[3]) : NaN;
  if (!m || port > 65535) throw new Error(`${what} "${text}" is not an address like ":8085" or "127.0.0.1:8085"`);
  const host = m[1] ?? m[2];
  return { host: host === '' || host === undefined ? undefined : host, port };
}
