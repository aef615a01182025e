/**
 * Run-time faults of expressions and actions (runtime/expr.py `describe_fault`): each carries
 * the words the Python runtime's `expression_error` message gives for the same fault.
 */

/** A run-time fault with a detail worded for the `expression_error` message. */
export class ExprFault extends Error {
  constructor(readonly detail: string) {
    super(detail);
    this.name = "ExprFault";
  }
}

/** What Python says of a `TypeError`: none where a value is needed, or the error's words. */
export function typeError(words: string): ExprFault {
  if (words.includes("NoneType")) return new ExprFault("a value is none where one is needed");
  return new ExprFault(`TypeError: ${words}`);
}

export function divisionByZero(): ExprFault {
  return new ExprFault("division by zero");
}

/** A fault's detail as the message shows it: at most 300 characters. */
export function describeFault(fault: { detail: string }): string {
  const text = fault.detail;
  return text.length <= 300 ? text : text.slice(0, 300) + "...";
}

/** A flow that cannot be run as compiled (Python's `IRLoadError`). */
export class IRLoadError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "IRLoadError";
  }
}
