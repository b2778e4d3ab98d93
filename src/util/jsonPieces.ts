// A value that serializes itself in pieces: persistence's streaming JSON encoder asks it for its text
// instead of walking it, so a large table kept in a compact form (the backup manifest's) is written
// as JSON without first becoming an object of 100k strings.

export const JSON_PIECES: unique symbol = Symbol('jsonPieces');

export interface JsonPiecesSource {
  /** The value's JSON text in pieces; joined, exactly what JSON.stringify gives for it (its toJSON's). */
  [JSON_PIECES](): Iterable<string>;
  toJSON(): unknown;
}

export function isJsonPiecesSource(v: unknown): v is JsonPiecesSource {
  return typeof v === 'object' && v !== null && typeof (v as Partial<JsonPiecesSource>)[JSON_PIECES] === 'function';
}
