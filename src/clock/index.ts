export { type Clock, systemClock, ManualClock } from './clock.js';
export { driftMs, validityMs, deadlineOf } from './drift.js';
