export { type Clock, systemClock, ManualClock, setBackgroundTimer } from './clock.js';
export { driftMs, validityMs, deadlineOf } from './drift.js';
