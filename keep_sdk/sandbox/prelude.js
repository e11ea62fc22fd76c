// The sandbox prelude. Evaluated as a global script in a new context before any
// workflow code; its completion value is `boot`, which the host calls once with the first
// phase's configuration (a JSON string). `boot` locks the realm down (every object a
// script can reach but the global object frozen and tamed), installs `Keep` and `console`,
// and returns `dispatch`, the only way the host talks to the context. In a context kept
// for reuse (`reusable` in the configuration) `dispatch("next", static, fields)` starts the
// next phase with fresh state (the two parts of its configuration: what the workflow
// version and the phase kind fix, and the phase's own fields), and `dispatch("check")`,
// which the host runs when each phase ends, says whether the global object is still as
// the lockdown left it; only a realm that passed it gets a next phase
// (keep_sdk/sandbox/realm.py).
//
// The host loads this file as ONE line (comment lines dropped, lines joined) behind a
// long run of spaces, so every prelude frame in a stack trace reads `<input>:1:<big
// column>` and cannot be mistaken for a line of the workflow script: keep every
// statement terminated by a semicolon and use no `//` outside whole-line comments.
//
// Contract with the host (keep_sdk/sandbox/engine.py):
// - every dispatch op catches everything and returns a flat primitive string;
// - the outbox is a string of lines, each one JSON array:
//     [id, "name", [args...], "stack"]               a ctx call (args serialized at call time)
//     ["log", "level", "text"]                       console output
//     ["!", "limit", "detail", "stack"]              a limit the script hit (host is authority)
//     ["late", "name", "stack"]                      a ctx call refused after the mutation call
//     ["site", line, column]                         where the handler function is defined
//     ["ret", line, column]                          the `return` that produced the value (as written)
//     ["done", value] / ["fail", {name, message, stack}]   the handler settled
// - the prelude relies only on functions captured here, before user code runs.
(function keepPrelude() {
  "use strict";
  const G = globalThis;
  const ObjectC = Object;
  const freeze = ObjectC.freeze;
  const isFrozen = ObjectC.isFrozen;
  const defineProperty = ObjectC.defineProperty;
  const getOwnPropertyNames = ObjectC.getOwnPropertyNames;
  const getOwnPropertyDescriptor = ObjectC.getOwnPropertyDescriptor;
  const getPrototypeOf = ObjectC.getPrototypeOf;
  const setPrototypeOf = ObjectC.setPrototypeOf;
  const create = ObjectC.create;
  const hasOwn = ObjectC.hasOwn;
  const isExtensible = ObjectC.isExtensible;
  const getOwnPropertySymbols = ObjectC.getOwnPropertySymbols;
  const getOwnPropertyDescriptors = ObjectC.getOwnPropertyDescriptors;
  const ownKeys = Reflect.ownKeys;
  const SymbolC = Symbol;
  const MapC = Map;
  const SetC = Set;
  const IteratorC = Iterator;
  const apply = Reflect.apply;
  const construct = Reflect.construct;
  const stringify = JSON.stringify;
  const parse = JSON.parse;
  const PromiseC = Promise;
  const then = PromiseC.prototype.then;
  const StringC = String;
  const strSlice = StringC.prototype.slice;
  const strIndexOf = StringC.prototype.indexOf;
  const charCodeAt = StringC.prototype.charCodeAt;
  const isWellFormed = StringC.prototype.isWellFormed;
  const toWellFormed = StringC.prototype.toWellFormed;
  const ErrorC = Error;
  const TypeErrorC = TypeError;
  const RangeErrorC = RangeError;
  const EvalErrorC = EvalError;
  const errorStackGetter = getOwnPropertyDescriptor(ErrorC.prototype, "stack").get;
  const functionPrototype = getPrototypeOf(function () {});
  const lineOf = getOwnPropertyDescriptor(functionPrototype, "lineNumber");
  const columnOf = getOwnPropertyDescriptor(functionPrototype, "columnNumber");
  const OriginalDate = Date;
  const regexpExec = RegExp.prototype.exec;
  const WeakMapC = WeakMap;
  const weakGet = WeakMapC.prototype.get;
  const weakSet = WeakMapC.prototype.set;
  const asciiOnly = /^[\x01-\x7f]*$/;
  const lineBreak = /[\n\r\u2028\u2029]/;
  const dateToString = OriginalDate.prototype.toString;

  function flat(text) {
    return apply(strSlice, text, [0]);
  }

  // Cut at `limit` UTF-16 units, never inside a surrogate pair, with a marker.
  function cut(text, limit) {
    if (text.length <= limit) return flat(text);
    let end = limit;
    const last = apply(charCodeAt, text, [end - 1]);
    if (last >= 0xd800 && last <= 0xdbff) end = end - 1;
    return flat(apply(strSlice, text, [0, end])) + "…[truncated]";
  }

  // `name` on one line: a function name cannot print a frame of its own into a stack.
  function oneLine(name) {
    if (apply(regexpExec, lineBreak, [name]) === null) return name;
    let text = "";
    for (let i = 0; i < name.length; i++) {
      const unit = apply(charCodeAt, name, [i]);
      const broken = unit === 0x0a || unit === 0x0d || unit === 0x2028 || unit === 0x2029;
      text = text + (broken ? "\\n" : apply(strSlice, name, [i, i + 1]));
    }
    return text;
  }

  // The engine's stack format, built from its call sites with every name on one line.
  function formatStack(error, sites) {
    let text = "";
    for (let i = 0; i < sites.length; i++) {
      const site = sites[i];
      const name = site.getFunctionName();
      const shown = typeof name === "string" && name !== "" ? oneLine(name) : "<anonymous>";
      if (site.isNative()) {
        text = text + "    at " + shown + " (native)\n";
      } else {
        text = text + "    at " + shown + " (" + site.getFileName() + ":" + site.getLineNumber() + ":" + site.getColumnNumber() + ")\n";
      }
    }
    return text;
  }

  // UTF-8 bytes of `text` once the host has replaced each lone surrogate and NUL with U+FFFD.
  function utf8Length(text) {
    if (apply(regexpExec, asciiOnly, [text]) !== null) return text.length;
    let bytes = 0;
    const length = text.length;
    for (let i = 0; i < length; i++) {
      const unit = apply(charCodeAt, text, [i]);
      if (unit === 0) {
        bytes = bytes + 3;
      } else if (unit < 0x80) {
        bytes = bytes + 1;
      } else if (unit < 0x800) {
        bytes = bytes + 2;
      } else if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < length) {
        const next = apply(charCodeAt, text, [i + 1]);
        if (next >= 0xdc00 && next <= 0xdfff) {
          bytes = bytes + 4;
          i = i + 1;
        } else {
          bytes = bytes + 3;
        }
      } else {
        bytes = bytes + 3;
      }
    }
    return bytes;
  }

  return function boot(configText) {
    const firstConfig = parse(configText);
    const reusable = firstConfig.reusable === true;
    const stubs = new WeakMapC();
    let current;

    // One phase's state and functions; `next` replaces `current` with a fresh one.
    function openPhase(config) {
      const pending = create(null);
      let outbox = "";
      let nextId = 1;
      let calls = 0;
      let tooManyCalls;
      let terminal = false;
      let settled = false;
      let logBytes = 0;
      let lastReturn;
      const returnedAt = new WeakMapC();
      let logClosed = false;
      let defined = false;
      let definition;

      function emit(line) {
        outbox = outbox + (apply(isWellFormed, line, []) ? line : apply(toWellFormed, line, [])) + "\n";
      }

      function flag(limit, detail, site) {
        emit('["!",' + stringify(limit) + "," + stringify(detail) + "," + stringify(site === undefined ? "" : site) + "]");
      }

      function stackOf(error) {
        let stack;
        try {
          stack = apply(errorStackGetter, error, []);
        } catch (ignored) {
          stack = undefined;
        }
        if (typeof stack !== "string") {
          try {
            stack = error.stack;
          } catch (ignored) {
            stack = undefined;
          }
        }
        return typeof stack === "string" ? stack : "";
      }

      function describe(thrown) {
        const kind = typeof thrown;
        let name = "Error";
        let message = "";
        let stack = "";
        let value = "error";
        if (thrown !== null && (kind === "object" || kind === "function")) {
          let readName;
          let readMessage;
          try {
            readName = thrown.name;
          } catch (ignored) {
            readName = undefined;
          }
          try {
            readMessage = thrown.message;
          } catch (ignored) {
            readMessage = undefined;
          }
          if (typeof readName === "string") name = readName;
          if (typeof readMessage === "string") message = readMessage;
          else value = "object";
          stack = stackOf(thrown);
        } else if (thrown === null) {
          value = "null";
        } else if (kind === "string") {
          value = "string";
          message = thrown;
        } else if (kind === "symbol") {
          value = "symbol";
        } else {
          value = kind;
          message = StringC(thrown);
        }
        return (
          '{"name":' +
          stringify(cut(name, 200)) +
          ',"message":' +
          stringify(cut(message, 2000)) +
          ',"stack":' +
          stringify(cut(stack, 4000)) +
          ',"value":' +
          stringify(value) +
          "}"
        );
      }

      function isObject(value) {
        return value !== null && (typeof value === "object" || typeof value === "function");
      }

      function markReturn(line, column, value) {
        lastReturn = [line, column];
        if (isObject(value)) apply(weakSet, returnedAt, [value, lastReturn]);
        return value;
      }

      function finishValue(value) {
        if (settled) return;
        settled = true;
        let at = lastReturn;
        if (isObject(value)) {
          const found = apply(weakGet, returnedAt, [value]);
          if (found !== undefined) at = found;
        }
        if (value !== undefined && at !== undefined) emit('["ret",' + stringify(at[0]) + "," + stringify(at[1]) + "]");
        let text;
        try {
          text = value === undefined ? undefined : stringify(value);
          if (value !== undefined && text === undefined) {
            emit('["fail",' + describe(new TypeErrorC("the handler returned a value that is not JSON (" + typeof value + ")")) + "]");
            return;
          }
        } catch (error) {
          emit('["fail",' + describe(error) + "]");
          return;
        }
        emit(text === undefined ? '["done"]' : '["done",' + text + "]");
      }

      function finishError(error) {
        if (settled) return;
        settled = true;
        emit('["fail",' + describe(error) + "]");
      }

      function encodeArgument(value, name) {
        let text;
        try {
          text = stringify(value);
        } catch (error) {
          let reason = "it cannot be serialized";
          try {
            const read = error.message;
            if (typeof read === "string") reason = read;
          } catch (ignored) {
            reason = "it cannot be serialized";
          }
          throw new TypeErrorC("the arguments of ctx." + name + " are not JSON: " + reason);
        }
        return text === undefined ? "null" : text;
      }

      function request(name, argumentList, mutation, implicit) {
        if (terminal) {
          const late = new ErrorC("ctx." + name + " was called after the mutation call; the mutation is terminal and nothing runs after it");
          emit('["late",' + stringify(name) + "," + stringify(cut(apply(errorStackGetter, late, []), 1000)) + "]");
          throw late;
        }
        calls = calls + 1;
        if (calls > config.maxCalls) {
          if (tooManyCalls === undefined) {
            flag("host_calls", "more than " + config.maxCalls + " ctx calls", cut(apply(errorStackGetter, new ErrorC(), []), 1000));
            tooManyCalls = new RangeErrorC("too many ctx calls: at most " + config.maxCalls + " per phase");
          }
          throw tooManyCalls;
        }
        const probe = new ErrorC();
        let site = cut(apply(errorStackGetter, probe, []), 1000);
        if (implicit) site = implicitSite(site);
        let encoded = "[";
        for (let i = 0; i < argumentList.length; i++) {
          encoded = encoded + (i === 0 ? "" : ",") + encodeArgument(argumentList[i], name);
        }
        encoded = encoded + "]";
        if (encoded.length > 2 * config.maxValueBytes) {
          flag("value_size", "the arguments of ctx." + name + " are more than " + config.maxValueBytes + " bytes of JSON, the limit; send less (page through it, keep ids instead of whole records)", site);
          throw new RangeErrorC("the arguments of ctx." + name + " exceed " + config.maxValueBytes + " bytes of JSON");
        }
        const id = nextId;
        nextId = id + 1;
        let settle;
        const promise = new PromiseC(function (resolve) {
          settle = resolve;
        });
        pending[id] = settle;
        if (mutation) terminal = true;
        emit("[" + id + "," + stringify(name) + "," + encoded + "," + stringify(site) + "]");
        return promise;
      }

      // The stack of a stub run with a `this` other than its owner: the caller frame is
      // replaced by one the host reads as an implicit call, never as a script site.
      function implicitSite(stack) {
        let end = 0;
        for (let seen = 0; seen < 2; seen++) {
          const next = apply(strIndexOf, stack, ["\n", end]);
          if (next < 0) return "";
          end = next + 1;
        }
        return apply(strSlice, stack, [0, end]) + "    at <operation run as a hook> (implicit)\n" + apply(strSlice, stack, [end]);
      }

      function stub(name, operation, mutation, arity, owner) {
        const fn = function () {
          if (arguments.length > arity) {
            throw new TypeErrorC("ctx." + name + " takes at most " + arity + " argument" + (arity === 1 ? "" : "s"));
          }
          const list = [];
          for (let i = 0; i < arguments.length; i++) list[i] = arguments[i];
          return request(name, list, mutation, this !== undefined && this !== owner);
        };
        defineProperty(fn, "name", { value: operation });
        apply(weakSet, stubs, [fn, true]);
        return freeze(fn);
      }

      function buildCtx() {
        const ctx = {};
        const connectors = create(null);
        const ops = config.operations;
        for (let i = 0; i < ops.length; i++) {
          const op = ops[i];
          let target = connectors[op.connector];
          if (target === undefined) {
            target = {};
            connectors[op.connector] = target;
            ctx[op.connector] = target;
          }
          target[op.operation] = stub(op.connector + "." + op.operation, op.operation, op.mutation, 1, target);
        }
        const topics = config.topicOperations;
        for (let i = 0; i < topics.length; i++) {
          ctx[topics[i]] = stub(topics[i], topics[i], false, 2, ctx);
        }
        const names = getOwnPropertyNames(connectors);
        for (let i = 0; i < names.length; i++) freeze(connectors[names[i]]);
        return freeze(ctx);
      }

      function show(value) {
        const kind = typeof value;
        if (kind === "string") return value;
        if (kind === "function") return "[function]";
        if (kind === "symbol") return "[symbol]";
        if (kind !== "object" || value === null) return StringC(value);
        try {
          if (value instanceof ErrorC) {
            const name = value.name;
            const message = value.message;
            return (typeof name === "string" ? name : "Error") + ": " + (typeof message === "string" ? message : "");
          }
          const text = stringify(value);
          return text === undefined ? "[object]" : text;
        } catch (ignored) {
          return "[unserializable object]";
        }
      }

      function log(level, argumentList) {
        if (logClosed) return;
        let text = "";
        for (let i = 0; i < argumentList.length; i++) {
          text = text + (i === 0 ? "" : " ") + show(argumentList[i]);
          if (text.length > config.maxLineChars) break;
        }
        text = cut(text, config.maxLineChars);
        logBytes = logBytes + utf8Length(text);
        if (logBytes > config.maxLogBytes) {
          logClosed = true;
          flag("log_bytes", "", cut(apply(errorStackGetter, new ErrorC(), []), 1000));
          throw new RangeErrorC("console output exceeds the run's max_log_bytes");
        }
        emit('["log",' + stringify(level) + "," + stringify(text) + "]");
      }

      function locate(handler, phase) {
        if (!defined) {
          throw new ErrorC("the script never called Keep.workflow(...); it must `export default Keep.workflow({...})`");
        }
        if (phase === "producer") {
          const producers = definition.producers;
          const producer = producers !== null && typeof producers === "object" && hasOwn(producers, handler) ? producers[handler] : undefined;
          if (typeof producer === "function") return [producer, undefined];
          if (producer !== null && typeof producer === "object" && typeof producer.handler === "function") {
            return [producer.handler, producer];
          }
          throw new ErrorC("the workflow has no producer " + stringify(handler) + " with a handler function");
        }
        const consumers = definition.consumers;
        const consumer = consumers !== null && typeof consumers === "object" && hasOwn(consumers, handler) ? consumers[handler] : undefined;
        if (consumer === null || typeof consumer !== "object") {
          throw new ErrorC("the workflow has no consumer " + stringify(handler));
        }
        const fn = consumer[phase];
        if (typeof fn !== "function") {
          throw new ErrorC("consumer " + stringify(handler) + " has no " + phase + " function");
        }
        return [fn, consumer];
      }

      function site(fn) {
        try {
          const line = apply(lineOf.get, fn, []);
          const column = apply(columnOf.get, fn, []);
          if (typeof line === "number" && typeof column === "number") {
            emit('["site",' + stringify(line) + "," + stringify(column) + "]");
          }
        } catch (ignored) {
          return;
        }
      }

      function begin(handler, phase, argumentList) {
        try {
          const found = locate(handler, phase);
          site(found[0]);
          const callArguments = [buildCtx()];
          for (let i = 0; i < argumentList.length; i++) callArguments[i + 1] = argumentList[i];
          const returned = apply(found[0], found[1], callArguments);
          const outcome = new PromiseC(function (resolve) {
            resolve(returned);
          });
          apply(then, outcome, [finishValue, finishError]);
        } catch (error) {
          finishError(error);
        }
      }

      function workflow(def) {
        if (defined) throw new ErrorC("Keep.workflow() was called more than once; a script declares exactly one workflow");
        if (def === null || typeof def !== "object") throw new TypeErrorC("Keep.workflow() expects an object");
        defined = true;
        definition = def;
        return def;
      }

      function drain() {
        const text = flat(outbox);
        outbox = "";
        return text;
      }

      function settle(id, text) {
        const resolve = pending[id];
        if (resolve === undefined) return "unknown";
        delete pending[id];
        resolve(parse(text));
        return "";
      }

      function run(module, handler, phase, argumentsText) {
        const argumentList = parse(argumentsText);
        const evaluated = module === null || module === undefined ? import("<input>") : module;
        apply(then, evaluated, [
          function () {
            begin(handler, phase, argumentList);
          },
          finishError,
        ]);
        return "";
      }

      return freeze({ log: log, describe: describe, markReturn: markReturn, workflow: workflow, drain: drain, settle: settle, run: run });
    }

    current = openPhase(firstConfig);

    function consoleMethod(level) {
      const fn = function () {
        const list = [];
        for (let i = 0; i < arguments.length; i++) list[i] = arguments[i];
        current.log(level, list);
      };
      defineProperty(fn, "name", { value: level });
      return fn;
    }

    function taming(proto, key, value) {
      const accessor = {
        get() {
          return value;
        },
        set(next) {
          if (this === proto) throw new TypeErrorC("cannot assign to read only property '" + key + "' of a built-in prototype");
          defineProperty(this, key, { value: next, writable: true, enumerable: true, configurable: true });
        },
      };
      return { get: freeze(accessor.get), set: freeze(accessor.set), enumerable: false, configurable: false };
    }

    const tamedKeys = ["constructor", "name", "message", "toString", "valueOf", "toLocaleString", "toJSON"];

    function harden(target) {
      if (target === null || (typeof target !== "object" && typeof target !== "function") || isFrozen(target)) return;
      for (let i = 0; i < tamedKeys.length; i++) {
        const key = tamedKeys[i];
        const descriptor = getOwnPropertyDescriptor(target, key);
        if (descriptor !== undefined && descriptor.writable === true && descriptor.configurable === true) {
          defineProperty(target, key, taming(target, key, descriptor.value));
        }
      }
      freeze(target);
    }

    function disableCodeGeneration() {
      const prototypes = [
        getPrototypeOf(function () {}),
        getPrototypeOf(async function () {}),
        getPrototypeOf(function* () {}),
        getPrototypeOf(async function* () {}),
      ];
      let first;
      for (let i = 0; i < prototypes.length; i++) {
        const blocked = function Function() {
          throw new EvalErrorC("code generation from strings is disabled in workflow scripts");
        };
        blocked.prototype = prototypes[i];
        freeze(blocked);
        defineProperty(prototypes[i], "constructor", { value: blocked, writable: false, enumerable: false, configurable: false });
        if (first === undefined) first = blocked;
      }
      defineProperty(G, "Function", { value: first, writable: true, enumerable: false, configurable: true });
      delete G.eval;
    }

    let phaseClock = firstConfig.clock;
    let a = 0;
    let b = 0;
    let c = 0;
    let d = 0;

    function random() {
      const t = (a + b) | 0;
      a = b ^ (b >>> 9);
      b = (c + (c << 3)) | 0;
      c = (c << 21) | (c >>> 11);
      d = (d + 1) | 0;
      const r = (t + d) | 0;
      c = (c + r) | 0;
      return (r >>> 0) / 4294967296;
    }

    // Math.random restarts at every phase: from `seed` (a replay's, mixed by sixteen draws)
    // or, in a kept realm, from the four random words the host drew for the phase, so what
    // one phase drew tells nothing to the next.
    function reseed(seed) {
      a = seed >>> 0;
      b = 0x9e3779b9;
      c = 0x243f6a88;
      d = 0xb7e15162;
      for (let i = 0; i < 16; i++) random();
    }

    function seedPhase(config) {
      const words = config.words;
      if (words === undefined || words === null) {
        reseed(config.seed);
        return;
      }
      a = words[0] >>> 0;
      b = words[1] >>> 0;
      c = words[2] >>> 0;
      d = words[3] >>> 0;
    }

    function installRandom() {
      seedPhase(firstConfig);
      defineProperty(Math, "random", { value: random, writable: true, enumerable: false, configurable: true });
    }

    // A kept realm's phases share the parsed part of their configuration that depends on the
    // workflow version and the phase kind alone (a few of them per realm); `next` parses only
    // the phase's own fields, which inherit the rest.
    const statics = [];

    function phaseConfig(staticText, fieldsText) {
      let shared;
      for (let i = 0; i < statics.length && shared === undefined; i++) {
        if (statics[i][0] === staticText) shared = statics[i][1];
      }
      if (shared === undefined) {
        if (statics.length >= 8) statics.length = 0;
        shared = freeze(parse(staticText));
        statics[statics.length] = [staticText, shared];
      }
      const config = parse(fieldsText);
      setPrototypeOf(config, shared);
      return config;
    }

    function installClock() {
      const FixedDate = function Date() {
        const list = [];
        for (let i = 0; i < arguments.length; i++) list[i] = arguments[i];
        if (new.target === undefined) return apply(dateToString, new OriginalDate(phaseClock), []);
        if (list.length === 0) return construct(OriginalDate, [phaseClock], new.target);
        return construct(OriginalDate, list, new.target);
      };
      FixedDate.prototype = OriginalDate.prototype;
      FixedDate.now = function now() {
        return phaseClock;
      };
      FixedDate.parse = OriginalDate.parse;
      FixedDate.UTC = OriginalDate.UTC;
      defineProperty(OriginalDate.prototype, "constructor", { value: FixedDate, writable: true, enumerable: false, configurable: true });
      defineProperty(G, "Date", { value: FixedDate, writable: true, enumerable: false, configurable: true });
      const performance = freeze({
        now: function now() {
          return 0;
        },
        get timeOrigin() {
          return phaseClock;
        },
      });
      defineProperty(G, "performance", { value: performance, writable: true, enumerable: false, configurable: true });
    }

    const originalBind = functionPrototype.bind;
    defineProperty(functionPrototype, "bind", {
      value: function bind() {
        if (apply(weakGet, stubs, [this]) === true) throw new TypeErrorC("ctx operations cannot be bound; call them as ctx.connector.operation(...)");
        return apply(originalBind, this, arguments);
      },
      writable: true,
      enumerable: false,
      configurable: true,
    });
    disableCodeGeneration();
    const deterministic = firstConfig.clock !== null;
    if (deterministic) installClock();
    if (deterministic || reusable) installRandom();

    delete JSON.rawJSON;
    delete JSON.isRawJSON;
    delete G.FinalizationRegistry;
    delete G.WeakRef;
    delete G.SharedArrayBuffer;
    delete G.Atomics;
    ErrorC.prepareStackTrace = formatStack;
    defineProperty(ErrorC, "prepareStackTrace", { value: formatStack, writable: false, enumerable: false, configurable: false });
    defineProperty(ErrorC, "stackTraceLimit", { value: 6, writable: false, enumerable: false, configurable: false });

    const resolvedPromise = new PromiseC(function (resolve) {
      resolve(undefined);
    });
    const queueMicrotask = function queueMicrotask(callback) {
      if (typeof callback !== "function") throw new TypeErrorC("queueMicrotask expects a function");
      apply(then, resolvedPromise, [
        function () {
          try {
            callback();
          } catch (error) {
            current.log("error", ["uncaught error in a queueMicrotask callback:", error]);
          }
        },
      ]);
    };
    defineProperty(G, "queueMicrotask", { value: queueMicrotask, writable: true, enumerable: false, configurable: true });

    const consoleObject = freeze({
      log: consoleMethod("log"),
      info: consoleMethod("info"),
      debug: consoleMethod("debug"),
      warn: consoleMethod("warn"),
      error: consoleMethod("error"),
    });
    defineProperty(G, "console", { value: consoleObject, writable: false, enumerable: false, configurable: false });

    const Keep = freeze({
      workflow: function workflow(def) {
        return current.workflow(def);
      },
      consumer: function consumer(def) {
        if (def === null || typeof def !== "object") throw new TypeErrorC("Keep.consumer() expects an object");
        return def;
      },
    });
    defineProperty(G, "Keep", { value: Keep, writable: false, enumerable: false, configurable: false });
    const markReturn = function markReturn(line, column, value) {
      return current.markReturn(line, column, value);
    };
    defineProperty(G, firstConfig.returnMarker, { value: freeze(markReturn), writable: false, enumerable: false, configurable: false });

    lockDown();
    pinGlobals();
    const baseline = reusable ? snapshotGlobal() : undefined;

    // A realm run again must hold nothing a phase left: every object reachable from the
    // global object, from syntax or through a prototype is frozen (the global object
    // itself stays open for scripts that use it and is compared with its baseline instead).
    function lockDown() {
      const seen = new WeakMapC();
      const todo = [
        function* () {},
        async function () {},
        async function* () {},
        async () => {},
        [][SymbolC.iterator](),
        new MapC().entries(),
        new SetC().values(),
        ""[SymbolC.iterator](),
        /a/g[SymbolC.matchAll](""),
        [].values().map(function (value) {
          return value;
        }),
        IteratorC.from({
          next: function () {
            return { done: true, value: undefined };
          },
        }),
        (function () {
          return arguments;
        })(),
        getPrototypeOf(Uint8Array),
        new DisposableStack(),
        new AsyncDisposableStack(),
        PromiseC.resolve(),
      ];
      const keys = getOwnPropertyNames(G);
      const symbols = getOwnPropertySymbols(G);
      for (let i = 0; i < keys.length; i++) pushDescriptor(todo, getOwnPropertyDescriptor(G, keys[i]));
      for (let i = 0; i < symbols.length; i++) pushDescriptor(todo, getOwnPropertyDescriptor(G, symbols[i]));
      todo[todo.length] = getPrototypeOf(G);
      while (todo.length > 0) {
        const target = todo[todo.length - 1];
        todo.length = todo.length - 1;
        if (target === null || (typeof target !== "object" && typeof target !== "function") || target === G) continue;
        if (apply(weakGet, seen, [target]) === true) continue;
        apply(weakSet, seen, [target, true]);
        harden(target);
        todo[todo.length] = getPrototypeOf(target);
        const descriptors = getOwnPropertyDescriptors(target);
        const keys = ownKeys(descriptors);
        for (let i = 0; i < keys.length; i++) pushDescriptor(todo, descriptors[keys[i]]);
      }
    }

    function pushDescriptor(todo, descriptor) {
      if (descriptor === undefined) return;
      if (hasOwn(descriptor, "value")) {
        todo[todo.length] = descriptor.value;
      } else {
        todo[todo.length] = descriptor.get;
        todo[todo.length] = descriptor.set;
      }
    }

    // Every property the global object holds after the lockdown is pinned: a data property
    // becomes non-writable and non-configurable, an accessor non-configurable. The engine
    // then keeps each of them as it is (a non-configurable, non-writable data property and
    // a non-configurable accessor cannot be changed or deleted), so a phase can change the
    // global object only by adding a property, by `preventExtensions` or by replacing its
    // prototype, which is what `pristine` looks for.
    function pinGlobals() {
      const keys = ownKeys(G);
      for (let i = 0; i < keys.length; i++) {
        const descriptor = getOwnPropertyDescriptor(G, keys[i]);
        if (hasOwn(descriptor, "value")) defineProperty(G, keys[i], { writable: false, configurable: false });
        else defineProperty(G, keys[i], { configurable: false });
      }
    }

    function snapshotGlobal() {
      return { count: ownKeys(G).length, prototype: getPrototypeOf(G) };
    }

    // Whether the global object is as the realm left it: still extensible, the same
    // prototype and no more keys (every key it had is pinned by `pinGlobals`, so the same
    // count is the same keys, each with the same value and attributes).
    function pristine() {
      return isExtensible(G) && getPrototypeOf(G) === baseline.prototype && ownKeys(G).length === baseline.count;
    }

    return function dispatch(op, first, second, third, fourth) {
      try {
        if (op === "drain") return current.drain();
        if (op === "settle") return current.settle(first, second);
        if (op === "run") return current.run(first, second, third, fourth);
        if (op === "check") return reusable && pristine() ? "clean" : "dirty";
        if (op === "next") {
          if (!reusable) return "dirty";
          const config = phaseConfig(first, second);
          phaseClock = config.clock;
          seedPhase(config);
          current = openPhase(config);
          return "";
        }
        return "unknown";
      } catch (error) {
        try {
          return "error:" + current.describe(error);
        } catch (ignored) {
          return "error";
        }
      }
    };
  };
})();
