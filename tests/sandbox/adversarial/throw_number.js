// attack: throw a number
// phase: producer
// expect: logic_error:threw a number
export default Keep.workflow({
  producers: { h: { handler: async (ctx, state) => {
    throw 42;
  } } },
});
