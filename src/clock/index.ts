export { type Clock, systemClock, ManualClock } from './clock.js';
export { type BackgroundTimer, clearBackgroundTimer, setBackgroundTimer } from './background.js';
export { driftMs, validityMs, deadlineOf } from './drift.js';
