export { type Clock, systemClock, ManualClock, driftMs, validityMs, deadlineOf } from './clock.js';
export { type BackgroundTimer, clearBackgroundTimer, setBackgroundTimer } from './background.js';
