// JSON Schema export of every event payload, for consumers in other languages. The files
// under `json-schema/` are generated from these schemas and a test keeps them fresh.

import { z } from "zod";
import { type EventType, EVENT_TYPES, eventPayloadSchemas, eventTypeUri } from "./events.ts";

export function eventJsonSchema(type: EventType): Record<string, unknown> {
  const schema = z.toJSONSchema(eventPayloadSchemas[type], { target: "draft-2020-12", unrepresentable: "any", io: "input" });
  return { ...schema, $id: eventTypeUri(type), title: type };
}

/** File path (relative to the package's `json-schema/` folder) for a type's schema. */
export function jsonSchemaFileName(type: EventType): string {
  return `${type}.schema.json`;
}

export function allEventJsonSchemas(): Array<{ type: EventType; file: string; text: string }> {
  return EVENT_TYPES.map((type) => ({
    type,
    file: jsonSchemaFileName(type),
    text: `${JSON.stringify(eventJsonSchema(type), null, 2)}\n`,
  }));
}
