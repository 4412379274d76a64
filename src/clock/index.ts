export { type Clock, systemClock, ManualClock, driftMs, validityMs, deadlineOf } from './clock.js';
export { onAbort } from './abort.js';
export { type BackgroundTimer, clearBackgroundTimer, setBackgroundTimer } from './background.js';
