// A small typed builder for OpenAPI v3 *structural* schemas (what apiextensions.k8s.io/v1 requires).
// One tree per kind feeds two renderers: toOpenAPI() for the CRD YAML and scripts/gen-crds.ts for
// the TypeScript types, so the two can never disagree. Only features served by Kubernetes 1.20.

interface Common {
  description?: string;
  /** Emitted as `nullable: true` and `| null` in TypeScript. */
  nullable?: boolean;
  /**
   * Declared (so the apiserver stores it and validation can name it) but not implemented: a run
   * that sets it to anything but null, false or empty fails validation with this reason.
   */
  unsupported?: string;
}

export type Schema =
  | (Common & { kind: 'string'; enum?: readonly string[]; format?: 'date-time'; pattern?: string; minLength?: number })
  | (Common & { kind: 'integer'; minimum?: number })
  | (Common & { kind: 'boolean' })
  | (Common & { kind: 'array'; items: Schema })
  /**
   * `preserveUnknownFields`: the apiserver stores fields the schema does not declare instead of
   * pruning them, so validation can refuse them by name (x-kubernetes-preserve-unknown-fields).
   */
  | (Common & { kind: 'object'; properties: Record<string, Schema>; required: readonly string[]; preserveUnknownFields?: boolean })
  | (Common & { kind: 'map'; values: Schema })
  | (Common & { kind: 'unknown-object' })
  /** A named type: rendered inline in OpenAPI, as a reference to an exported type alias in TypeScript. */
  | (Common & { kind: 'named'; name: string; schema: Schema });

type Opts = Common;

export const s = {
  string: (o: Opts & { pattern?: string; minLength?: number } = {}): Schema => ({ kind: 'string', ...o }),
  enum: (values: readonly string[], o: Opts = {}): Schema => ({ kind: 'string', enum: values, ...o }),
  /** RFC 3339 timestamp (metav1.Time on the wire). */
  dateTime: (o: Opts = {}): Schema => ({ kind: 'string', format: 'date-time', ...o }),
  int: (o: Opts & { minimum?: number } = {}): Schema => ({ kind: 'integer', ...o }),
  bool: (o: Opts = {}): Schema => ({ kind: 'boolean', ...o }),
  array: (items: Schema, o: Opts = {}): Schema => ({ kind: 'array', items, ...o }),
  object: <P extends Record<string, Schema>>(properties: P, o: Opts & { required?: readonly (keyof P & string)[] } = {}): Schema => ({
    kind: 'object',
    properties,
    ...o,
    required: o.required ?? [],
  }),
  map: (values: Schema, o: Opts = {}): Schema => ({ kind: 'map', values, ...o }),
  /** Free-form object; the apiserver keeps whatever is inside (x-kubernetes-preserve-unknown-fields). */
  unknownObject: (o: Opts = {}): Schema => ({ kind: 'unknown-object', ...o }),
  named: (name: string, schema: Schema, o: Opts = {}): Schema => ({ kind: 'named', name, schema, ...o }),
};

export type OpenAPISchema = { [k: string]: unknown };

/** Renders the structural OpenAPI v3 schema accepted by apiextensions.k8s.io/v1. */
export function toOpenAPI(schema: Schema, description?: string): OpenAPISchema {
  const desc = description ?? schema.description;
  const out: OpenAPISchema = {};
  if (desc !== undefined) out.description = desc;
  switch (schema.kind) {
    case 'named':
      return toOpenAPI({ ...schema.schema, nullable: schema.nullable ?? schema.schema.nullable }, desc ?? schema.schema.description);
    case 'string':
      out.type = 'string';
      if (schema.format !== undefined) out.format = schema.format;
      if (schema.enum !== undefined) out.enum = [...schema.enum];
      if (schema.pattern !== undefined) out.pattern = schema.pattern;
      if (schema.minLength !== undefined) out.minLength = schema.minLength;
      break;
    case 'integer':
      out.type = 'integer';
      if (schema.minimum !== undefined) out.minimum = schema.minimum;
      break;
    case 'boolean':
      out.type = 'boolean';
      break;
    case 'array':
      out.type = 'array';
      out.items = toOpenAPI(schema.items);
      break;
    case 'object': {
      out.type = 'object';
      const props: Record<string, OpenAPISchema> = {};
      for (const [k, v] of Object.entries(schema.properties)) props[k] = toOpenAPI(v);
      out.properties = props;
      if (schema.required.length > 0) out.required = [...schema.required];
      if (schema.preserveUnknownFields === true) out['x-kubernetes-preserve-unknown-fields'] = true;
      break;
    }
    case 'map':
      out.type = 'object';
      out.additionalProperties = toOpenAPI(schema.values);
      break;
    case 'unknown-object':
      out.type = 'object';
      out['x-kubernetes-preserve-unknown-fields'] = true;
      break;
  }
  if (schema.nullable === true) out.nullable = true;
  return out;
}

export interface PrinterColumn {
  name: string;
  type: 'string' | 'integer' | 'boolean' | 'date' | 'number';
  jsonPath: string;
  description?: string;
  /** 0 shows in `kubectl get`; higher values only with `-o wide`. */
  priority?: number;
}

/** Everything needed to render one kind's CRD and its TypeScript types. */
export interface KindDef {
  kind: string;
  plural: string;
  singular: string;
  shortNames: readonly string[];
  description: string;
  /** Must be a `named` schema (the spec's TypeScript type name). */
  spec: Schema;
  specRequired: boolean;
  status: Schema;
  printerColumns: readonly PrinterColumn[];
}
