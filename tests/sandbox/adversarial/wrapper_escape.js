// attack: source that tries to close a wrapper
// phase: producer
// expect: logic_error:SyntaxError
}); globalThis.escaped = 1; (async function () {
export default Keep.workflow({ producers: { h: async () => 1 } });
