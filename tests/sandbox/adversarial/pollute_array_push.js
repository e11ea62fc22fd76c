// attack: Array.prototype.push override
// phase: producer
// expect: logic_error:TypeError
export default Keep.workflow({
  producers: { h: { handler: async (ctx, state) => {
    Array.prototype.push = function () { for (;;) {} };
    return [].push(1);
  } } },
});
