import Redis from 'ioredis';
import { spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { releaseLua } from '../dist/esm/lua-sources.js';
