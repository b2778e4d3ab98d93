// Messages about the entries of a key Secret (encryption and signing keys alike): they name
// entries, never their values.

/** Why `entry` cannot be used, when the Secret does not hold it (listing what it does hold); undefined when it does. */
export function missingSecretEntry(secret: string, entry: string, data: Record<string, unknown>): string | undefined {
  if (data[entry] !== undefined) return undefined;
  const listed = Object.keys(data).sort();
  return `Secret ${secret} has no key "${entry}"${listed.length > 0 ? ` (it has ${listed.map((k) => `"${k}"`).join(', ')})` : ' (it is empty)'}`;
}
