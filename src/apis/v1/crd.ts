// Renders a KindDef into an apiextensions.k8s.io/v1 CustomResourceDefinition (plain JSON),
// restricted to what Kubernetes 1.20 serves: structural schema, status subresource, printer columns.
import { GROUP, VERSION } from './constants.js';
import { toOpenAPI, type KindDef, type OpenAPISchema } from './schema.js';

export type CustomResourceDefinition = {
  apiVersion: 'apiextensions.k8s.io/v1';
  kind: 'CustomResourceDefinition';
  metadata: { name: string; labels: Record<string, string> };
  spec: {
    group: string;
    scope: 'Namespaced';
    names: { kind: string; listKind: string; plural: string; singular: string; shortNames?: string[]; categories: string[] };
    versions: {
      name: string;
      served: true;
      storage: true;
      schema: { openAPIV3Schema: OpenAPISchema };
      subresources: { status: Record<string, never> };
      additionalPrinterColumns: OpenAPISchema[];
    }[];
  };
};

export function crdName(def: KindDef): string {
  return `${def.plural}.${GROUP}`;
}

export function buildCrd(def: KindDef): CustomResourceDefinition {
  const root: OpenAPISchema = {
    description: def.description,
    type: 'object',
    properties: {
      apiVersion: { type: 'string' },
      kind: { type: 'string' },
      metadata: { type: 'object' },
      spec: toOpenAPI(def.spec),
      status: toOpenAPI(def.status),
    },
  };
  if (def.specRequired) root.required = ['spec'];
  const names: CustomResourceDefinition['spec']['names'] = {
    kind: def.kind,
    listKind: `${def.kind}List`,
    plural: def.plural,
    singular: def.singular,
    categories: ['stowage'],
  };
  if (def.shortNames.length > 0) names.shortNames = [...def.shortNames];
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: crdName(def), labels: { 'app.kubernetes.io/name': 'stowage' } },
    spec: {
      group: GROUP,
      scope: 'Namespaced',
      names,
      versions: [
        {
          name: VERSION,
          served: true,
          storage: true,
          schema: { openAPIV3Schema: root },
          subresources: { status: {} },
          additionalPrinterColumns: def.printerColumns.map((c) => {
            const col: OpenAPISchema = { name: c.name, type: c.type, jsonPath: c.jsonPath };
            if (c.description !== undefined) col.description = c.description;
            if (c.priority !== undefined) col.priority = c.priority;
            return col;
          }),
        },
      ],
    },
  };
}
