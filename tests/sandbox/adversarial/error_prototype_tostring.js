// attack: Error.prototype.toString override
// phase: producer
// expect: logic_error:TypeError
export default Keep.workflow({
  producers: { h: { handler: async (ctx, state) => {
    Error.prototype.toString = function () { for (;;) {} };
    throw new Error('x');
  } } },
});
