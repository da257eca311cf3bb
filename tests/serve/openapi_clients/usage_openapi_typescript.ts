// serve_openapi_clients: the types openapi-typescript makes of docs/openapi.json must take the
// requests the protocol allows. tsc --strict compiles this file against the generated
// openapi-typescript/skycmd.ts; nothing here runs. A `state` typed Record<string, never> (an
// object schema without additionalProperties) would reject withObject below; a Question or a
// State typed `any` would make the @ts-expect-error lines fail instead.
import type { components, paths } from "./openapi-typescript/skycmd";

type Schemas = components["schemas"];
type Request = Schemas["SystemOneRequest"];

const questions: Request["questions"] = {
  action: {
    type: "choice",
    instructions: "Which input keeps the drone flying through the next gap?",
    criteria: { thrust: "fire the rotors for an upward impulse", glide: "let gravity pull the drone down" },
  },
  danger: { type: "noul" },
  margin: {
    type: "score",
    instructions: "How much room is left above and below the drone?",
    criteria: ["none", "tight", "comfortable"],
  },
};

export const withString: Request = { state: "vy 0 dx 36 up 9 dn 7 nxt 10 alt 32", questions };
export const withObject: Request = { state: { vy: 0, dx: 36, gaps: [9, 7], next: { alt: 32 } }, questions };
export const withList: Request = { state: ["vy 0", 36, null, { alt: 32 }], questions, min_confidence: { "choice:2": 0.6 } };
export const withNumber: Request = { state: 36, questions, min_confidence: 0.5, tournament_group: 2 };
export const batch: Schemas["SystemOneBatchRequest"] = { states: ["vy 0", { vy: 0 }, [1, 2]], questions };
// the body of the operation, as a fetch wrapper (openapi-fetch) would take it
export const body: paths["/v1/systemone"]["post"]["requestBody"]["content"]["application/json"] = withObject;

// @ts-expect-error: a question type the protocol does not have
export const badType: Request = { state: "x", questions: { q: { type: "maybe", instructions: "?" } } };
// @ts-expect-error: `state` is required
export const noState: Request = { questions };

// the answers: the discriminator narrows each one to its own fields
export function describe(res: Schemas["SystemOneResponse"]): string[] {
  const out: string[] = [];
  for (const [id, a] of Object.entries(res.answers)) {
    if (a.type === "choice") {
      const p: number = a.probabilities[a.choice];
      const finalists: string[] | undefined = a.x_tournament?.finalists;
      out.push(`${id}: ${a.choice} ${p} ${a.confidence} ${finalists?.length ?? 0}`);
    } else if (a.type === "score") {
      out.push(`${id}: ${a.score} ${a.legend["0"]} ${a.confidence}`);
    } else {
      out.push(`${id}: ${a.noul} ${a.low_confidence === true}`);
    }
  }
  return out;
}

export function errorText(e: Schemas["Error"] | Schemas["ValidationError"]): string {
  const where = Array.isArray(e.detail) ? e.detail.map((d) => d.loc.join(".")).join(", ") : e.detail.error_type;
  return `${e.error.code} ${e.error.type}: ${e.error.message} (${where})`;
}
