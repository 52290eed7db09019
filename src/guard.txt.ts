// What a background child is told when it calls a delegating tool (guard.ts).

/** The refusal of `tool` in a background child: it must do the work itself. */
export const childCannotDelegate = (tool: string) =>
  `Refused: this session is a background task; it cannot hand its work to another agent (the ${tool} tool). Do the work directly in this session with your other tools.`;
