package dev.jrdma.netty;

import io.netty.channel.ChannelOption;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.BiConsumer;
import java.util.function.BiFunction;
import java.util.function.Function;

/**
 * The options a channel config adds to Netty's, one row each (the option, its getter, its setter), so that
 * {@code getOptions}, {@code getOption} and {@code setOption} read the same rows and an option cannot be missing from
 * one of them. Options not in the table go to the config's superclass, as Netty's own configs pass them on.
 *
 * @param <C> the config the getters and setters belong to
 */
final class OptionTable<C> {
    private record Row<C, T>(Function<C, T> getter, BiConsumer<C, T> setter) {}

    private final Map<ChannelOption<?>, Row<C, ?>> rows = new LinkedHashMap<>();

    /** {@return this table with a row for {@code option}} */
    <T> OptionTable<C> add(ChannelOption<T> option, Function<C, T> getter, BiConsumer<C, T> setter) {
        rows.put(option, new Row<>(getter, setter));
        return this;
    }

    /** {@return the options of the table, in the order they were added} */
    ChannelOption<?>[] options() {
        return rows.keySet().toArray(new ChannelOption<?>[0]);
    }

    /** {@return the value of {@code option} in {@code config}, or {@code otherwise}'s when the table lacks it} */
    @SuppressWarnings("unchecked") // a row is added only with its option's type
    <T> T get(C config, ChannelOption<T> option, Function<ChannelOption<T>, T> otherwise) {
        Row<C, T> row = (Row<C, T>) rows.get(option);
        return row == null ? otherwise.apply(option) : row.getter().apply(config);
    }

    /**
     * Sets {@code option} in {@code config} (the value already validated), or passes it to {@code otherwise} when the
     * table lacks it.
     *
     * @return true when the option was set (Netty's {@code setOption} contract)
     */
    @SuppressWarnings("unchecked") // a row is added only with its option's type
    <T> boolean set(C config, ChannelOption<T> option, T value, BiFunction<ChannelOption<T>, T, Boolean> otherwise) {
        Row<C, T> row = (Row<C, T>) rows.get(option);
        if (row == null) return otherwise.apply(option, value);
        row.setter().accept(config, value);
        return true;
    }
}
