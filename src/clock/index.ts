export { type Clock, systemClock, ManualClock, driftMs, validityMs, deadlineOf, afterPoll } from './clock.js';
export { onAbort } from './abort.js';
export { type BackgroundTimer, clearBackgroundTimer, setBackgroundTimer } from './background.js';
