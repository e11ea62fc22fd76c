// attack: GeneratorFunction constructor
// phase: producer
// expect: logic_error:EvalError
export default Keep.workflow({
  producers: { h: { handler: async (ctx, state) => {
    return (function* () {}).constructor('yield 1')().next().value;
  } } },
});
