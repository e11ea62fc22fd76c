// attack: throw a Symbol
// phase: producer
// expect: logic_error:threw a symbol
export default Keep.workflow({
  producers: { h: { handler: async (ctx, state) => {
    throw Symbol('s');
  } } },
});
