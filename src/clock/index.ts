export { type Clock, systemClock, ManualClock, setBackgroundTimer, timersOf } from './clock.js';
export { driftMs, validityMs, deadlineOf } from './drift.js';
